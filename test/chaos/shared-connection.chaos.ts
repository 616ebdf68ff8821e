import { constants as h2 } from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { grpcFrame, h2Connect, rawResetFlood } from "../support/h2-raw.js";
import { sleep } from "../support/load.js";
import { reportFigures, tally } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

const SECONDS = 60;

describe("a shared connection (a BFF or a proxy multiplexing many users)", () => {
  let svc: TestService;
  let quiz: QuizFixture;
  beforeAll(async () => {
    svc = await startTestService();
    quiz = await insertQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("30 cancellations a second among its calls for 60 s: no GOAWAY, no other call fails; a rapid-reset flood still gets GOAWAY within 1 s", async () => {
    const session = await h2Connect(svc.baseUrl);
    session.on("error", () => {});
    let goaway: number | undefined;
    session.on("goaway", (code: number) => {
      goaway = code;
    });
    // Users of the BFF, each with a token of their own.
    const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => svc.token(`bff-${i}`)));
    const body = grpcFrame(new Uint8Array([0x0a, quiz.quizId.length, ...Buffer.from(quiz.quizId)]));
    const outcomes: string[] = [];
    const calls: Promise<void>[] = [];
    let n = 0;
    const t0 = performance.now();
    // Every 100 ms, 10 calls: 3 cancelled 2–20 ms after they are sent, 7 left to finish.
    while (performance.now() - t0 < SECONDS * 1000 && goaway === undefined) {
      for (let i = 0; i < 10; i++) {
        const cancel = i < 3;
        const stream = session.request({
          ":method": "POST",
          ":path": "/practice.v1.PracticeSessionService/ListSessions",
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${tokens[n++ % tokens.length]}`,
        });
        stream.on("error", () => {});
        stream.end(body);
        stream.resume();
        if (cancel) setTimeout(() => stream.close(h2.NGHTTP2_CANCEL), 2 + (n % 19));
        calls.push(
          new Promise<void>((resolve) => {
            let status: string | undefined;
            stream.on("trailers", (t) => {
              status = String(t["grpc-status"]);
            });
            stream.once("close", () => {
              if (!cancel) outcomes.push(status ?? `reset ${stream.rstCode}`);
              resolve();
            });
          }),
        );
      }
      await sleep(100);
    }
    await Promise.all(calls);
    session.destroy();
    const port = Number(new URL(svc.baseUrl).port);
    const f0 = performance.now();
    const goaways = await rawResetFlood(port, 1000, 1000);
    const floodMs = performance.now() - f0;
    reportFigures("30 cancellations a second on one connection for 60 s", {
      calls: n,
      cancelled: Math.round(n * 0.3),
      goaway,
      others: tally(outcomes, String),
      rapidResetGoaways: goaways,
      rapidResetAnsweredWithinMs: Math.round(floodMs),
    });
    expect(goaway).toBeUndefined();
    expect(outcomes.filter((o) => o !== "0")).toEqual([]);
    // The flood's connection: GOAWAY ENHANCE_YOUR_CALM within the 1 s the flood is given.
    expect(goaways[0]).toBe(h2.NGHTTP2_ENHANCE_YOUR_CALM);
  }, 120_000);
});
