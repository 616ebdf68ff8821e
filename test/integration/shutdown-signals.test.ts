import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase, testStore } from "../support/database.js";
import { keepAliveClients } from "../support/keep-alive-clients.js";
import { listeningPort, serviceEnv } from "../support/listening.js";
import { reportFigures } from "../support/reliability.js";

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
    env: serviceEnv({
      DATABASE_URL: database.url,
      NODE_ENV: "production",
    }),
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const port = await listeningPort(child).port;
  return { child, port, exit };
}

const cases: [string, NodeJS.Signals, number, "node" | "group"][] = [
  ["SIGTERM once to node", "SIGTERM", 1, "node"],
  ["SIGTERM twice at once to the process group (npm forwarding)", "SIGTERM", 2, "group"],
  ["SIGINT twice at once to node", "SIGINT", 2, "node"],
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
      reportFigures(`shutdown ${name}`, { code, ...clients.tally });
      expect(code).toBe(0);
      expect(clients.tally.answers).toBeGreaterThan(0);
      expect(clients.tally.resets).toBeLessThanOrEqual(1);
    }, 30_000);
  }
});
