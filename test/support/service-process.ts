import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { signToken } from "../../src/auth/tokens.js";
import {
  imageAllocator,
  type MemoryCgroup,
  manifestMemoryLimit,
  manifestNodeOptions,
  memoryCgroup,
} from "./container.js";
import { createTestDatabase, type TestDatabase } from "./database.js";
import { listeningPort, serviceEnv } from "./listening.js";
import { callers, TEST_SECRET, type TestService } from "./service.js";

/** What a test needs of a service in a process of its own: its clients, its database, its pid. */
export type ServiceProcess = Pick<
  TestService,
  "db" | "baseUrl" | "metricsUrl" | "token" | "auth" | "rest" | "connect" | "grpcWeb" | "grpc"
> & {
  pid: number;
  /** Its database (a fresh one of the test server's). */
  databaseUrl: string;
  /** What the process holds in memory now (VmRSS of /proc/PID/status), in bytes. */
  rss(): number;
  /** Whether the process has exited (killed past its memory limit, say). */
  exited(): boolean;
  close(): Promise<void>;
};

/**
 * The service (src/main.ts) in a process of its own, as `npm start` runs it,
 * on a fresh test database: what its process holds is its own, not the
 * test's (vitest, the clients). Logs at info (the listening lines).
 */
export async function startServiceProcess(
  options: {
    /**
     * Run it as its container does: in a memory cgroup of the manifest's
     * limit (its heap sized from it, killed past it) with the image's
     * allocator. Where this machine cannot, the test is refused (CI) or
     * runs without them, saying so.
     */
    asInContainer?: boolean;
  } = {},
): Promise<ServiceProcess> {
  const database: TestDatabase = await createTestDatabase();
  let cgroup: MemoryCgroup | undefined;
  /** The container's environment: its allocator and Node's options. */
  let containerEnv: Record<string, string> = {};
  if (options.asInContainer) {
    const made = memoryCgroup(manifestMemoryLimit());
    const found = imageAllocator();
    const why = [made, found].filter((x) => typeof x === "string").join("; ");
    if (why !== "") {
      if (process.env.CI) throw new Error(`CI runs the service as in its container: ${why}`);
      console.warn(`the service runs without its container's limits here: ${why}`);
    }
    if (typeof made === "object") cgroup = made;
    if (typeof found === "object") containerEnv = found;
    containerEnv.NODE_OPTIONS = manifestNodeOptions();
  }
  const node = ["--import", "tsx", "src/main.ts"];
  const [command, args] =
    cgroup === undefined ? [process.execPath, node] : cgroup.wrap(process.execPath, node);
  const child: ChildProcess = spawn(command, args, {
    env: serviceEnv({
      DATABASE_URL: database.url,
      NODE_ENV: "production",
      PRACTICE_PAGE: "off",
      OUTBOX_RELAY: "off",
      ...containerEnv,
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
  const hasExited = () => child.exitCode !== null || child.signalCode !== null;
  return {
    db: database.db,
    baseUrl,
    metricsUrl: `http://127.0.0.1:${metricsPort}`,
    pid,
    databaseUrl: database.url,
    ...calls,
    rss() {
      if (hasExited()) return 0;
      const kb = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      return Number(kb?.[1] ?? 0) * 1024;
    },
    exited: hasExited,
    async close() {
      calls.grpc.close();
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      cgroup?.remove();
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
