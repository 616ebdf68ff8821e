import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { signToken } from "../../src/auth/tokens.js";
import { testStore } from "../support/database.js";
import { REPO } from "../support/entry.js";
import { listeningPort, serviceEnv } from "../support/listening.js";
import { TEST_SECRET } from "../support/service.js";

// OTEL_TRACES_EXPORTER=console, as a person trying tracing sets it: the
// service's stdout stays one JSON document per line, a span per line beside
// the log's lines, not console.dir's multi-line dumps.

let service: ChildProcess | undefined;
afterAll(() => {
  service?.kill("SIGKILL");
});

describe.skipIf(testStore() === "mysql")("the console span exporter", () => {
  it("writes one JSON line per span", async () => {
    service = spawn(
      process.execPath,
      ["--import", "tsx", "--import", "./src/instrument.ts", "src/main.ts"],
      {
        cwd: REPO,
        env: serviceEnv({
          DATABASE_URL: "sqlite::memory:",
          PRACTICE_PAGE: "off",
          NATS_URL: undefined,
          OTEL_TRACES_EXPORTER: "console",
          OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
          OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
        }),
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    const { port, output } = listeningPort(service);
    const base = `http://127.0.0.1:${await port}`;
    const headers = { authorization: `Bearer ${await signToken(TEST_SECRET, "console-spans")}` };
    for (const [method, path] of [
      ["GET", "/quizzes"],
      ["GET", "/quizzes/1"],
      ["POST", "/quizzes/1/sessions"],
      ["GET", "/quizzes/1/sessions"],
    ]) {
      expect((await fetch(`${base}${path}`, { method, headers })).ok).toBe(true);
    }
    const spanLines = () =>
      output()
        .split("\n")
        .filter((l) => l.includes('"traceId"'));
    // Exported as each span ends (the console exporter's processor does not batch).
    await expect.poll(() => spanLines().length, { timeout: 10_000 }).toBeGreaterThanOrEqual(4);
    const lines = output()
      .split("\n")
      .filter((l) => l !== "");
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    const span = JSON.parse(spanLines()[0] ?? "{}") as { traceId?: string; name?: string };
    expect(span.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(span.name).toEqual(expect.any(String));
  }, 60_000);
});
