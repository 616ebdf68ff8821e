import { connect as netConnect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIRST_BYTES_TIMEOUT_MS } from "../../src/limits.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep } from "../support/load.js";
import { listVia, percentile, reportFigures, tally } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * Connections that each send one byte and then nothing: the first byte of
 * the HTTP/2 preface, so the port cannot yet tell HTTP/1.1 from HTTP/2 and
 * holds the connection until its first-bytes limit.
 */
function oneByte(port: number): { socket: Socket; closed: Promise<number> } {
  const socket = netConnect(port, "127.0.0.1");
  const t0 = performance.now();
  socket.on("error", () => {});
  socket.once("connect", () => socket.write("P"));
  const closed = new Promise<number>((resolve) =>
    socket.once("close", () => resolve(performance.now() - t0)),
  );
  return { socket, closed };
}

/** `count` one-byte connections, opened 200 at a time so the listen backlog keeps up. */
async function flood(port: number, count: number) {
  const conns: ReturnType<typeof oneByte>[] = [];
  for (let i = 0; i < count; i += 200) {
    const batch = Array.from({ length: Math.min(200, count - i) }, () => oneByte(port));
    conns.push(...batch);
    await Promise.all(
      batch.map(
        (c) =>
          new Promise<void>((resolve) => {
            c.socket.once("connect", () => resolve());
            c.socket.once("close", () => resolve());
          }),
      ),
    );
  }
  return conns;
}

describe("a flood of connections that send one byte", () => {
  let svc: TestService;
  let quiz: QuizFixture;
  beforeAll(async () => {
    svc = await startTestService();
    quiz = await insertQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("3,000 held connections: others keep ≥ 99% success, and the flood is dropped at the first-bytes limit", async () => {
    const port = Number(new URL(svc.baseUrl).port);
    const t0 = performance.now();
    const flooding = flood(port, 3000);
    let opened = 0;
    let dropped = false;
    const closedAfter = flooding.then(async (conns) => {
      opened = performance.now() - t0;
      const after = await Promise.race([
        Promise.all(conns.map((c) => c.closed)),
        sleep(3 * FIRST_BYTES_TIMEOUT_MS).then(() => undefined),
      ]);
      dropped = true;
      return after;
    });
    const outcomes = [];
    // Ordinary callers, 4 at a time over REST and gRPC, from the flood's start until it is dropped.
    while (!dropped) {
      outcomes.push(
        ...(await Promise.all([
          listVia(svc, "rest", "other-1", quiz.quizId),
          listVia(svc, "grpc", "other-2", quiz.quizId),
          listVia(svc, "rest", "other-3", quiz.quizId),
          listVia(svc, "grpc", "other-4", quiz.quizId),
        ])),
      );
    }
    const conns = await flooding;
    const closed = await closedAfter;
    for (const c of conns) c.socket.destroy();
    const ok = outcomes.filter((o) => o.code === "ok").length;
    reportFigures("3,000 one-byte connections", {
      openedMs: Math.round(opened),
      calls: outcomes.length,
      codes: tally(outcomes, (o) => o.code),
      p99: Math.round(
        percentile(
          outcomes.map((o) => o.ms),
          99,
        ),
      ),
      floodDroppedAfterMs: closed && [
        Math.round(Math.min(...closed)),
        Math.round(Math.max(...closed)),
      ],
    });
    expect(outcomes.length).toBeGreaterThan(0);
    expect(ok / outcomes.length).toBeGreaterThanOrEqual(0.99);
    // Every flood connection dropped by the service, none before its limit.
    expect(closed).toBeDefined();
    expect(Math.min(...(closed as number[]))).toBeGreaterThanOrEqual(FIRST_BYTES_TIMEOUT_MS - 100);
  }, 60_000);
});

describe("the connection cap", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ maxConnections: 200 });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("near the cap, each new connection closes the one idle longest: the newest are held and a caller gets in at once", async () => {
    const port = Number(new URL(svc.baseUrl).port);
    const held = await flood(port, 200);
    await sleep(200);
    const beyond = await flood(port, 50);
    await sleep(200);
    const t0 = performance.now();
    const health = await fetch(`${svc.baseUrl}/healthz`);
    const healthMs = performance.now() - t0;
    const all = [...held, ...beyond];
    const open = all.map((c) => !c.socket.destroyed);
    const firstOpen = open.indexOf(true);
    reportFigures("connection cap 200", {
      open: open.filter(Boolean).length,
      closedOldestFirst: firstOpen,
      healthz: health.status,
      healthzMs: Math.round(healthMs),
    });
    expect(health.status).toBe(200);
    // 90% of the cap (180) held at most: the oldest closed, the newest kept.
    expect(open.filter(Boolean).length).toBeLessThanOrEqual(180);
    expect(open.slice(firstOpen).every(Boolean)).toBe(true);
    for (const c of all) c.socket.destroy();
  }, 60_000);
});
