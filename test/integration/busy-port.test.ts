import { spawn } from "node:child_process";
import type { AddressInfo } from "node:net";
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { testStore } from "../support/database.js";
import { TEST_SECRET } from "../support/service.js";

let blocker: Server;
let port: number;

beforeAll(async () => {
  blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
  port = (blocker.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => blocker.close(resolve));
});

/** Runs `npm start`'s command with `env`; resolves with its exit code and output. */
function runService(env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    // Generous: tsx compiles the service first, slow on a busy machine.
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

it.skipIf(testStore() === "mysql")(
  "a busy port: one clear line on stderr, no stack trace, exit 1",
  async () => {
    const { code, stderr } = await runService({
      PORT: String(port),
      METRICS_PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: "sqlite::memory:",
      JWT_SECRET: TEST_SECRET,
      LOG_LEVEL: "silent",
      // The page's build is not what this test is about, and it takes seconds on a busy box.
      PRACTICE_PAGE: "off",
    });
    expect(code).toBe(1);
    const lines = stderr.split("\n").filter((l) => l.trim() !== "");
    expect(lines).toEqual([
      `cannot listen on 127.0.0.1:${port}: the port is already in use (stop the other process, or set PORT to a free port)`,
    ]);
  },
  90_000,
);
