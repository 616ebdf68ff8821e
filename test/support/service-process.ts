import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { signToken } from "../../src/auth/tokens.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { listeningPort, serviceEnv } from "./listening.js";
import { callers, TEST_SECRET, type TestService } from "./service.js";

/** What a test needs of a service in a process of its own: its clients, its database, its pid. */
export type ServiceProcess = Pick<
  TestService,
  "db" | "baseUrl" | "metricsUrl" | "token" | "auth" | "rest" | "connect" | "grpcWeb" | "grpc"
> & {
  pid: number;
  /** What the process holds in memory now (VmRSS of /proc/PID/status), in bytes. */
  rss(): number;
  close(): Promise<void>;
};

/**
 * The service (src/main.ts) in a process of its own, as `npm start` runs it,
 * on a fresh test database: what its process holds is its own, not the
 * test's (vitest, the clients). Logs at info (the listening lines).
 */
export async function startServiceProcess(): Promise<ServiceProcess> {
  const database: TestDatabase = await createTestDatabase();
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env: serviceEnv({
      DATABASE_URL: database.url,
      NODE_ENV: "production",
      PRACTICE_PAGE: "off",
      OUTBOX_RELAY: "off",
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const listening = listeningPort(child);
  const port = await listening.port.catch((err: Error) => {
    throw new Error(`${err.message}\n${stderr}`);
  });
  const metricsPort = await until(() => {
    const m = /"port":(\d+)[^\n]*"msg":"metrics listening/.exec(listening.output());
    return m ? Number(m[1]) : undefined;
  });
  const pid = child.pid as number;
  const baseUrl = `http://127.0.0.1:${port}`;
  const calls = callers(baseUrl, (sub) => signToken(TEST_SECRET, sub, { now: new Date() }));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  return {
    db: database.db,
    baseUrl,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    pid,
    ...calls,
    rss() {
      const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      return Number(kb?.[1] ?? 0) * 1024;
    },
    async close() {
      calls.grpc.close();
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      await database.drop();
    },
  };
}

async function until<T>(value: () => T | undefined): Promise<T> {
  for (;;) {
    const v = value();
    if (v !== undefined) return v;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
