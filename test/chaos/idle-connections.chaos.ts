import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep } from "../support/load.js";
import { openIdleConnections } from "../support/raw-http.js";
import { listVia, percentile, reportFigures, TRANSPORTS } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
let port: number;

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db);
  port = Number(new URL(svc.baseUrl).port);
});
afterAll(async () => {
  await svc?.close();
});

const closedCount = (sockets: Socket[]) =>
  sockets.filter((s) => s.closed || s.readableEnded).length;

describe("idle and slow connections, held past the service's 5 s first-bytes timeout", () => {
  it("keeps answering while 1,000 silent and 300 half-sent-request connections sit on the port, and drops the silent ones after 5 s", async () => {
    const silent = await openIdleConnections(port, 1000);
    const slow = await openIdleConnections(port, 300);
    // Half a request line and one header, then nothing (slowloris).
    for (const s of slow) s.write(`GET /quizzes/${quiz.quizId}/sessions HTTP/1.1\r\nhost: x\r\n`);
    const t0 = performance.now();
    const ms: number[] = [];
    for (let i = 0; performance.now() - t0 < 11_500 && i < 200; i++) {
      for (const transport of TRANSPORTS) {
        const outcome = await listVia(svc, transport, "patient", quiz.quizId);
        expect(outcome.code).toBe("ok");
        ms.push(outcome.ms);
      }
      await sleep(250);
    }
    await sleep(200);
    const silentClosed = closedCount(silent);
    const slowClosed = closedCount(slow);
    reportFigures("1,000 silent + 300 slow connections for 11.5 s", {
      calls: ms.length,
      p50Ms: percentile(ms, 50),
      maxMs: percentile(ms, 100),
      silentClosedByServer: silentClosed,
      slowClosedByServer: slowClosed,
    });
    for (const s of [...silent, ...slow]) s.destroy();
    expect(percentile(ms, 100)).toBeLessThan(2000);
    // one-port.ts drops a connection that has sent nothing for FIRST_BYTES_TIMEOUT_MS (5 s).
    expect(silentClosed).toBe(1000);
  });
});
