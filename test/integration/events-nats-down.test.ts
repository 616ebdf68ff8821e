import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signToken } from "../../src/auth/tokens.js";
import { testStore } from "../support/database.js";
import { serviceEnv } from "../support/listening.js";
import { TEST_SECRET } from "../support/service.js";

/**
 * The real service (src/main.ts) with NATS_URL set to a port where nothing
 * answers: it starts, is ready, serves, and keeps the events in the outbox
 * (the backlog metric counts them). Runs in the SQLite pass (an in-memory
 * store: the process owns it).
 */

let child: ChildProcess | undefined;
let baseUrl = "";
let log = "";

/** A port of 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The service's /metrics listener (METRICS_PORT). */
let metricsUrl = "";

beforeAll(async () => {
  if (testStore() !== "sqlite") return;
  child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env: serviceEnv({
      DATABASE_URL: "sqlite::memory:",
      NATS_URL: `nats://127.0.0.1:${await closedPort()}`,
    }),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child?.stdout?.on("data", (chunk) => {
      log += chunk;
      const match = /"port":(\d+).*"msg":"listening"/.exec(log);
      const scrape = /"port":(\d+).*"msg":"metrics listening/.exec(log);
      if (match && scrape) {
        metricsUrl = `http://127.0.0.1:${scrape[1]}`;
        resolve(Number(match[1]));
      }
    });
    child?.once("exit", () => reject(new Error(`service exited before listening:\n${log}`)));
  });
  baseUrl = `http://127.0.0.1:${port}`;
});
afterAll(() => {
  child?.kill("SIGKILL");
});

describe.skipIf(testStore() !== "sqlite")("the service while NATS does not answer", () => {
  it("is ready, serves starts, and keeps their events in the outbox", async () => {
    expect((await fetch(`${baseUrl}/readyz`)).status).toBe(200);
    const token = await signToken(TEST_SECRET, "nats-down");
    // The demo content's first quiz.
    const res = await fetch(`${baseUrl}/quizzes/1/sessions`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(201);
    const metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(/^practice_outbox_backlog 1$/m);
    expect(metrics).toMatch(/^practice_outbox_relay_connected 0$/m);
    expect((await fetch(`${baseUrl}/readyz`)).status).toBe(200);
    expect(log).toMatch(/outbox relay on/);
  });
});
