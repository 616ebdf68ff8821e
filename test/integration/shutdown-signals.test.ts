import { type ChildProcess, spawn } from "node:child_process";
import { Agent, request as http1Request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase, testStore } from "../support/database.js";
import { TEST_SECRET } from "../support/service.js";

let database: TestDatabase;

beforeAll(async () => {
  if (testStore() === "mysql") database = await createTestDatabase("mysql");
});
afterAll(async () => {
  await database?.drop();
});

/** The real service (src/main.ts) in a process group of its own; resolves once it listens. */
async function startService(): Promise<{
  child: ChildProcess;
  port: number;
  exit: Promise<number | null>;
}> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      JWT_SECRET: TEST_SECRET,
      HOST: "127.0.0.1",
      PORT: "0",
      METRICS_PORT: "0",
      LOG_LEVEL: "info",
      NODE_ENV: "production",
    },
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk) => {
      out += chunk;
      const match = /"port":(\d+).*"msg":"listening"/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", () => reject(new Error(`service exited before listening:\n${out}`)));
  });
  return { child, port, exit };
}

/**
 * 8 HTTP/1.1 keep-alive clients, each looping GET /healthz on its own
 * connection until `stop()`: how many answers, and how many resets.
 */
function keepAliveClients(port: number) {
  const tally = { answers: 0, resets: 0, refused: 0, other: 0 };
  let running = true;
  const loops = Array.from({ length: 8 }, async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    while (running) {
      await new Promise<void>((resolve) => {
        const req = http1Request({ host: "127.0.0.1", port, path: "/healthz", agent }, (res) => {
          res.resume().on("end", () => {
            tally.answers++;
            resolve();
          });
        });
        req.on("error", (err: NodeJS.ErrnoException) => {
          if (err.code === "ECONNRESET") tally.resets++;
          else if (err.code === "ECONNREFUSED") tally.refused++;
          else tally.other++;
          // Refused: the port is closed, the stop is under way; stop looping.
          if (err.code === "ECONNREFUSED") running = false;
          resolve();
        });
        req.end();
      });
    }
    agent.destroy();
  });
  return {
    tally,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

const cases: [string, NodeJS.Signals, number, "node" | "group"][] = [
  ["SIGTERM once to node", "SIGTERM", 1, "node"],
  ["SIGTERM twice within a second to the process group (npm forwarding)", "SIGTERM", 2, "group"],
  ["SIGINT twice within a second to node", "SIGINT", 2, "node"],
  ["SIGINT once to the process group", "SIGINT", 1, "group"],
];

// One MariaDB database for all the runs (the spawned service needs a shared store).
describe.skipIf(testStore() === "sqlite")("one stop whatever the signal", () => {
  for (const [name, signal, times, target] of cases) {
    it(`${name}: drains and exits 0, with at most 1 reset among 8 keep-alive clients`, async () => {
      const { child, port, exit } = await startService();
      const clients = keepAliveClients(port);
      await new Promise((r) => setTimeout(r, 500));
      // A repeat comes right after the first, as npm's forwarding does.
      for (let i = 0; i < times; i++) {
        try {
          if (target === "group") process.kill(-(child.pid as number), signal);
          else child.kill(signal);
        } catch (err) {
          // Already gone: it stopped before the repeat arrived.
          if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
        }
      }
      const code = await exit;
      await clients.stop();
      console.log(`[figures] shutdown ${name}: ${JSON.stringify({ code, ...clients.tally })}`);
      expect(code).toBe(0);
      expect(clients.tally.answers).toBeGreaterThan(0);
      expect(clients.tally.resets).toBeLessThanOrEqual(1);
    }, 30_000);
  }
});
