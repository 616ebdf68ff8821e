import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { keepAliveClients } from "../support/keep-alive-clients.js";
import { listeningPort, serviceEnv } from "../support/listening.js";
import { reportFigures } from "../support/reliability.js";

/**
 * `npm start` as an operator runs it, stopped as a terminal's Ctrl-C,
 * systemd and `docker stop` stop it: the signal goes to the whole process
 * group (npm, and the node it runs), and npm forwards it to node too.
 */
const dirs: string[] = [];
const groups: number[] = [];
afterAll(() => {
  for (const pid of groups) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** `npm start` in a process group of its own, on a SQLite file; resolves once it listens. */
async function npmStart(): Promise<{
  npm: ChildProcess;
  port: number;
  out: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}> {
  const dir = mkdtempSync(join(tmpdir(), "practice-npm-start-"));
  dirs.push(dir);
  const npm = spawn("npm", ["start"], {
    env: serviceEnv({
      DATABASE_URL: `sqlite:${join(dir, "db.sqlite")}`,
      NODE_ENV: "production",
      PRACTICE_PAGE: "off",
    }),
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  groups.push(npm.pid as number);
  const listening = listeningPort(npm);
  let stderr = "";
  npm.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    npm.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const port = await listening.port;
  return { npm, port, out: () => listening.output() + stderr, exit };
}

/** The service's log lines whose message matches `msg`. */
const lines = (out: string, msg: RegExp) =>
  out.split("\n").filter((line) => {
    const m = /"msg":"([^"]*)"/.exec(line);
    return m !== null && msg.test(m[1] as string);
  });

describe("npm start, stopped through its process group", () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    it(`${signal} to the group: one drain, node and npm exit 0, at most 1 reset among 8 keep-alive clients`, async () => {
      // The build (tsc) comes first: give it time.
      const { npm, port, out, exit } = await npmStart();
      const clients = keepAliveClients(port);
      await new Promise((r) => setTimeout(r, 500));
      process.kill(-(npm.pid as number), signal);
      const ended = await exit;
      await clients.stop();
      const log = out();
      const figures = {
        npm: ended,
        drains: lines(log, /^shutting down$/).length,
        repeats: lines(log, /already shutting down|forced exit|took too long/).length,
        stopped: lines(log, /^stopped$/).length,
        ...clients.tally,
      };
      reportFigures(`npm start, ${signal} to the process group`, figures);
      expect(figures.drains).toBe(1);
      expect(figures.repeats).toBe(0);
      // Node's own clean exit (its exit code is npm's, below).
      expect(figures.stopped).toBe(1);
      expect(ended).toEqual({ code: 0, signal: null });
      expect(clients.tally.answers).toBeGreaterThan(0);
      expect(clients.tally.resets).toBeLessThanOrEqual(1);
    }, 120_000);
  }
});
