import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { signToken } from "../../src/auth/tokens.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { createGrpcClient } from "./grpc-client.js";
import { listeningPort, serviceEnv } from "./listening.js";
import { TEST_SECRET, type TestService } from "./service.js";

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
  const token = (sub: string) => signToken(TEST_SECRET, sub, { now: new Date() });
  const auth = async (user: string) => ({ authorization: `Bearer ${await token(user)}` });
  const grpc = createGrpcClient(PracticeSessionService, `127.0.0.1:${port}`);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  return {
    db: database.db,
    baseUrl,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    pid,
    token,
    auth,
    async rest(user, method, path, init = {}) {
      const headers = new Headers(init.headers);
      if (user !== null) headers.set("authorization", `Bearer ${await token(user)}`);
      return fetch(`${baseUrl}${path}`, { ...init, method, headers });
    },
    connect: createClient(
      PracticeSessionService,
      createConnectTransport({ baseUrl, httpVersion: "2" }),
    ),
    grpcWeb: createClient(
      PracticeSessionService,
      createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }),
    ),
    grpc,
    rss() {
      const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      return Number(kb?.[1] ?? 0) * 1024;
    },
    async close() {
      grpc.close();
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
