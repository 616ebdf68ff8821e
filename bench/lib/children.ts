import { type ChildProcess, spawn } from "node:child_process";
import { connect, createServer } from "node:net";

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const address = s.address();
      const port = typeof address === "object" && address ? address.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export interface Child {
  name: string;
  pid: number;
  port: number;
  stop(): Promise<void>;
}

/** How a child runs: which Node binary, with which extra flags (`--cpu-prof`, say). */
export interface Runtime {
  node?: string;
  nodeFlags?: string[];
  /** The folder holding the dist/ to run (default: this one). */
  cwd?: string;
  /** A command the Node process runs under (valgrind, say), and how long its start may take. */
  wrap?: string[];
  startTimeoutMs?: number;
}

/** BENCH_NODE_FLAGS: extra flags for every server started (`--cpu-prof`: BENCHMARKS.md). */
const EXTRA_FLAGS = (process.env.BENCH_NODE_FLAGS ?? "").split(" ").filter(Boolean);

/**
 * Runs the compiled JavaScript of `entry` (a source path: "src/main.ts" runs
 * dist/src/main.js, as `npm start` does) in a Node process of its own (so
 * /proc has its CPU and RSS) and waits until it accepts connections on `port`.
 */
export async function startChild(
  name: string,
  entry: string,
  env: Record<string, string>,
  runtime: Runtime = {},
): Promise<Child> {
  const port = Number(env.PORT);
  const js = `dist/${entry.replace(/\.ts$/, ".js")}`;
  const flags = ["--enable-source-maps", ...EXTRA_FLAGS, ...(runtime.nodeFlags ?? [])];
  const node = runtime.node ?? process.execPath;
  const [command = node, ...args] = [...(runtime.wrap ?? []), node, ...flags, js];
  const child: ChildProcess = spawn(command, args, {
    cwd: runtime.cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "inherit", "inherit"],
  });
  let exited = false;
  const exit = new Promise<void>((resolve) =>
    child.once("exit", () => {
      exited = true;
      resolve();
    }),
  );
  const deadline = Date.now() + (runtime.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited) throw new Error(`${name} exited during start-up`);
    try {
      await new Promise<void>((resolve, reject) => {
        const socket = connect(port, "127.0.0.1", () => {
          socket.destroy();
          resolve();
        });
        socket.once("error", reject);
      });
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`${name} did not listen on ${port}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    name,
    pid: child.pid as number,
    port,
    async stop() {
      if (!exited) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** The JWT secret every server of a run verifies with. */
export const SECRET = "bench-secret-bench-secret-bench-secret-0123";
export const POOL_SIZE = 10;

/** The service as `npm start` runs it (production mode: no page, no banner), on a free port. */
export async function startService(
  dbUrl: string,
  env: Record<string, string> = {},
  runtime: Runtime = {},
) {
  return startChild(
    "service",
    "src/main.ts",
    {
      PORT: String(await freePort()),
      METRICS_PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: dbUrl,
      JWT_SECRET: SECRET,
      LOG_LEVEL: "error",
      DB_POOL_SIZE: String(POOL_SIZE),
      NODE_ENV: "production",
      ...env,
    },
    runtime,
  );
}

/** A hand-written baseline server (bench/servers/NAME.ts) on the same database. */
export async function startBaseline(
  name: "bare-fastify" | "grpc-js" | "raw-h2",
  dbUrl: string,
  runtime: Runtime = {},
) {
  return startChild(
    name,
    `bench/servers/${name}.ts`,
    {
      PORT: String(await freePort()),
      // As the service's: callgrind_control finds a process under valgrind by its HOST too.
      HOST: "127.0.0.1",
      DATABASE_URL: dbUrl,
      JWT_SECRET: SECRET,
      DB_POOL_SIZE: String(POOL_SIZE),
    },
    runtime,
  );
}

/** Progress on stderr; stdout carries only the Markdown report. */
export function log(msg: string): void {
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);
}
