import { type ClientHttp2Session, constants as h2 } from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ListSessionsRequestSchema,
  StartSessionRequestSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import {
  EMPTY_MESSAGE,
  endStatus,
  firstOutcome,
  grpcFrame,
  grpcRequest,
  h2Connect,
  WATCH_PATH,
} from "../support/h2-raw.js";
import { sleep } from "../support/load.js";
import { listVia, percentile, reportFigures, tally } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * One client against the whole service, as an attacker would (loopback,
 * bounded loops): thousands of Watch streams, reset floods from two
 * connections, 200 streams of calls in flight at once, a /readyz flood.
 * Other callers must be served meanwhile.
 */
let svc: TestService;
let quiz: QuizFixture;

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

const LIST = "/practice.v1.PracticeSessionService/ListSessions";
const START = "/practice.v1.PracticeSessionService/StartSession";

/** A legitimate caller's REST lists until `stop()`: their latencies and codes. */
function bystander(user: string) {
  const ms: number[] = [];
  const codes: string[] = [];
  let stopped = false;
  const running = (async () => {
    for (let i = 0; !stopped && i < 10_000; i++) {
      const outcome = await listVia(svc, "rest", user, quiz.quizId);
      ms.push(outcome.ms);
      codes.push(outcome.code);
      await sleep(20);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await running;
      return { ms, codes };
    },
  };
}

describe("hostile traffic", () => {
  it("3,000 health Watch streams from 30 connections: at most 16 live per connection, the rest refused", async () => {
    const heapBefore = process.memoryUsage().heapUsed;
    const sessions: ClientHttp2Session[] = [];
    const outcomes: { live: boolean; status?: number }[] = [];
    try {
      for (let c = 0; c < 30; c++) {
        const session = await h2Connect(svc.baseUrl);
        sessions.push(session);
        const calls = Array.from({ length: 100 }, () =>
          grpcRequest(session, WATCH_PATH, EMPTY_MESSAGE),
        );
        outcomes.push(...(await Promise.all(calls.map(firstOutcome))));
      }
      const heapMiB = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
      const live = outcomes.filter((o) => o.live).length;
      const refused = outcomes.filter((o) => !o.live && o.status === Code.ResourceExhausted).length;
      reportFigures("3,000 Watch streams", {
        live,
        refused,
        heapGrowthMiB: Math.round(heapMiB),
      });
      expect(live).toBe(30 * 16);
      expect(refused).toBe(outcomes.length - live);
      // The service still answers others.
      expect((await listVia(svc, "grpc", "watcher", quiz.quizId)).code).toBe("ok");
    } finally {
      for (const s of sessions) s.destroy();
    }
  });

  it("two connections resetting StartSession streams (up to 3,000 each, reconnecting after GOAWAY): closed with GOAWAY, few handlers run, others served", async () => {
    const body = grpcFrame(
      toBinary(
        StartSessionRequestSchema,
        create(StartSessionRequestSchema, { quizId: quiz.quizId }),
      ),
    );
    const tokens = await Promise.all(
      Array.from({ length: 500 }, (_, i) => svc.token(`flood-${i}`)),
    );
    const other = bystander("bystander-reset");
    let sent = 0;
    let goaways = 0;
    const attacker = async () => {
      let mine = 0;
      // Bounded by count, not time: a loaded box must still see a real flood.
      while (mine < 3000) {
        const session = await h2Connect(svc.baseUrl).catch(() => undefined);
        if (session === undefined) continue;
        session.on("error", () => {});
        session.once("goaway", (code: number) => {
          if (code === h2.NGHTTP2_ENHANCE_YOUR_CALM) goaways++;
        });
        while (!session.closed && !session.destroyed && mine < 3000) {
          const stream = grpcRequest(session, START, body, {
            authorization: `Bearer ${tokens[sent % tokens.length]}`,
          });
          stream.close(h2.NGHTTP2_CANCEL);
          sent++;
          mine++;
          if (sent % 20 === 0) await new Promise((r) => setImmediate(r));
        }
        session.destroy();
      }
    };
    await Promise.all([attacker(), attacker()]);
    const { ms, codes } = await other.stop();
    await sleep(500);
    const created = await svc.db
      .selectFrom("practice_sessions")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("user_id", "like", "flood-%")
      .executeTakeFirstOrThrow();
    reportFigures("reset flood, 2 x 3,000 resets", {
      resetsSent: sent,
      goaways,
      sessionsCreated: Number(created.n),
      bystander: {
        calls: codes.length,
        codes: tally(codes, (c) => c),
        p50: percentile(ms, 50),
        p99: percentile(ms, 99),
      },
    });
    expect(goaways).toBeGreaterThan(0);
    expect(Number(created.n)).toBeLessThan(sent / 10);
    // Served, or shed at once when the box is too busy: never an error of ours.
    expect(codes.every((c) => c === "ok" || c === "unavailable")).toBe(true);
  });

  it("one user's 200 calls in flight at once for 5 s (2 connections x 100 streams): only resource_exhausted or unavailable beyond the limit, no 5xx of ours", async () => {
    const token = await svc.token("flooder");
    const body = grpcFrame(
      toBinary(
        ListSessionsRequestSchema,
        create(ListSessionsRequestSchema, { quizId: quiz.quizId }),
      ),
    );
    const other = bystander("bystander-flood");
    const statuses: number[] = [];
    const okMs: number[] = [];
    const connection = async () => {
      const session = await h2Connect(svc.baseUrl);
      const until = performance.now() + 5000;
      const lane = async () => {
        while (performance.now() < until && statuses.length < 500_000) {
          const t0 = performance.now();
          const status = await endStatus(
            grpcRequest(session, LIST, body, { authorization: `Bearer ${token}` }),
          );
          statuses.push(status);
          if (status === 0) okMs.push(performance.now() - t0);
        }
      };
      await Promise.all(Array.from({ length: 100 }, lane));
      session.destroy();
    };
    await Promise.all([connection(), connection()]);
    const { ms, codes } = await other.stop();
    const byCode = tally(statuses, (s) => (Code[s] ?? String(s)).toString());
    reportFigures("200 streams in flight for 5 s", {
      calls: statuses.length,
      byCode,
      okPerSecond: Math.round(okMs.length / 5),
      okP50: percentile(okMs, 50),
      okP99: percentile(okMs, 99),
      bystander: {
        calls: codes.length,
        codes: tally(codes, (c) => c),
        p50: percentile(ms, 50),
        p99: percentile(ms, 99),
      },
    });
    expect(okMs.length).toBeGreaterThan(0);
    const refusals = [Code.ResourceExhausted, Code.Unavailable];
    expect(statuses.every((s) => s === 0 || refusals.includes(s))).toBe(true);
    expect(codes.every((c) => c === "ok" || c === "unavailable")).toBe(true);
  });

  it("a /readyz flood (50 at a time for 3 s) stays 200 and leaves users' lists alone", async () => {
    const other = bystander("bystander-readyz");
    const statuses: number[] = [];
    const until = performance.now() + 3000;
    const prober = async () => {
      while (performance.now() < until && statuses.length < 200_000) {
        statuses.push((await fetch(`${svc.baseUrl}/readyz`)).status);
      }
    };
    await Promise.all(Array.from({ length: 50 }, prober));
    const { ms, codes } = await other.stop();
    reportFigures("/readyz flood, 3 s", {
      probes: statuses.length,
      byStatus: tally(statuses, String),
      bystander: { calls: codes.length, p50: percentile(ms, 50), p99: percentile(ms, 99) },
    });
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(codes.every((c) => c === "ok" || c === "unavailable")).toBe(true);
  });
});
