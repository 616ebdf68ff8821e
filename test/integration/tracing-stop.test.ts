import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signToken } from "../../src/auth/tokens.js";
import { listeningPort, serviceEnv } from "../support/listening.js";
import { reportFigures } from "../support/reliability.js";
import { TEST_SECRET } from "../support/service.js";

/** How long the test gives the service's stop (SHUTDOWN_TIMEOUT_MS). */
const SHUTDOWN_TIMEOUT_MS = 1500;

describe("tracing to a collector that never answers", () => {
  let collector: Server;
  const held: Socket[] = [];
  let dir: string;
  beforeAll(async () => {
    // Accepts the exporter's connections and never answers a byte.
    collector = createServer((socket) => {
      held.push(socket);
      socket.on("error", () => {});
    });
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve));
    dir = mkdtempSync(join(tmpdir(), "tracing-stop-"));
  });
  afterAll(async () => {
    for (const s of held) s.destroy();
    collector.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("says once that exports fail, and stops within SHUTDOWN_TIMEOUT_MS", async () => {
    const address = collector.address() as { port: number };
    const service = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: serviceEnv({
        DATABASE_URL: `sqlite:${join(dir, "practice.db")}`,
        PRACTICE_PAGE: "off",
        SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${address.port}`,
        OTEL_SERVICE_NAME: "practice-sessions",
        OTEL_BSP_SCHEDULE_DELAY: "100",
        // Each export gives up after 3 s (10 s by default): failures come
        // within the test, and the last export at the stop outlasts its budget.
        OTEL_EXPORTER_OTLP_TIMEOUT: "3000",
      }),
      stdio: ["ignore", "pipe", "inherit"],
    });
    const listening = listeningPort(service);
    const port = await listening.port;
    const token = await signToken(TEST_SECRET, "tracer");
    // Calls whose spans go nowhere for 5 s: several export batches, each failing.
    for (let i = 0; i < 25; i++) {
      await fetch(`http://127.0.0.1:${port}/quizzes`, {
        headers: { authorization: `Bearer ${token}` },
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    // A last call, whose span the stop must export.
    await fetch(`http://127.0.0.1:${port}/quizzes`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const t0 = performance.now();
    const exited = new Promise<number | null>((resolve) => service.once("exit", resolve));
    service.kill("SIGTERM");
    const code = await exited;
    const stopMs = performance.now() - t0;
    const lines = listening
      .output()
      .split("\n")
      .filter((l) => l.includes("trace export failing"));
    reportFigures("tracing to a dead collector", {
      stopMs: Math.round(stopMs),
      code,
      failureLines: lines.length,
    });
    expect(lines.length).toBe(1);
    expect(code).toBe(0);
    // Bound, not a speed target: the stop's budget and a second for the process itself.
    expect(stopMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 1000);
  }, 60_000);
});
