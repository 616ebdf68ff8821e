import { constants as h2 } from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServerReflectionRequestSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { StartSessionRequestSchema } from "../../gen/practice/v1/practice_session_service_pb.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import {
  EMPTY_MESSAGE,
  endStatus,
  firstOutcome,
  grpcFrame,
  grpcRequest,
  h2Connect,
  rawResetFlood,
  WATCH_PATH,
} from "../support/h2-raw.js";
import { reportFigures } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

const REFLECTION_PATH = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";

/**
 * HTTP/2 abuse from one client, over real node:http2 connections: many
 * long-lived streams, streams reset as soon as they are sent, resets as a
 * flood. Whatever path serves the call, these must hold.
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

describe("long-lived streams", () => {
  it("advertises SETTINGS_MAX_CONCURRENT_STREAMS of 100", async () => {
    const session = await h2Connect(svc.baseUrl);
    try {
      expect(session.remoteSettings.maxConcurrentStreams).toBe(100);
    } finally {
      session.destroy();
    }
  });

  it("keeps at most 16 health Watch streams open per connection; more are resource_exhausted", async () => {
    const session = await h2Connect(svc.baseUrl);
    try {
      const calls = Array.from({ length: 60 }, () =>
        grpcRequest(session, WATCH_PATH, EMPTY_MESSAGE),
      );
      const outcomes = await Promise.all(calls.map(firstOutcome));
      const live = outcomes.filter((o) => o.live).length;
      const refused = outcomes.filter((o) => !o.live && o.status === Code.ResourceExhausted).length;
      reportFigures("watch streams on one connection", { asked: calls.length, live, refused });
      expect(live).toBe(16);
      expect(refused).toBe(calls.length - 16);
    } finally {
      session.destroy();
    }
  });
});

describe("long-lived streams, with small caps", () => {
  let small: TestService;
  beforeAll(async () => {
    small = await startTestService({
      streamLimits: { perConnection: 4, total: 6, lifetimeMs: 1500 },
    });
  });
  afterAll(async () => {
    await small?.close();
  });

  it("caps streams process-wide and ends each one when its lifetime is over", async () => {
    const a = await h2Connect(small.baseUrl);
    const b = await h2Connect(small.baseUrl);
    try {
      const onA = Array.from({ length: 5 }, () => grpcRequest(a, WATCH_PATH, EMPTY_MESSAGE));
      const outcomesA = await Promise.all(onA.map(firstOutcome));
      const onB = Array.from({ length: 5 }, () => grpcRequest(b, WATCH_PATH, EMPTY_MESSAGE));
      const outcomesB = await Promise.all(onB.map(firstOutcome));
      const live = (o: { live: boolean }[]) => o.filter((x) => x.live).length;
      // 4 on A (its connection cap), then 2 on B (the process cap of 6).
      expect([live(outcomesA), live(outcomesB)]).toEqual([4, 2]);
      // The live ones end by themselves, status OK, after their lifetime.
      const liveStreams = [...onA, ...onB].filter((_, i) =>
        i < 5 ? outcomesA[i]?.live : outcomesB[i - 5]?.live,
      );
      const ends = await Promise.all(liveStreams.map(endStatus));
      expect(ends).toEqual(liveStreams.map(() => 0));
      // Their slots are free again.
      const again = await firstOutcome(grpcRequest(b, WATCH_PATH, EMPTY_MESSAGE));
      expect(again.live).toBe(true);
    } finally {
      a.destroy();
      b.destroy();
    }
  });

  it("ends a reflection conversation the client keeps open when its lifetime is over", async () => {
    const session = await h2Connect(small.baseUrl);
    try {
      const request = toBinary(
        ServerReflectionRequestSchema,
        create(ServerReflectionRequestSchema, {
          messageRequest: { case: "listServices", value: "" },
        }),
      );
      const stream = session.request({
        ":method": "POST",
        ":path": REFLECTION_PATH,
        "content-type": "application/grpc",
        te: "trailers",
      });
      stream.on("error", () => {});
      // One request, and the request side left open: the client could ask more at any time.
      stream.write(grpcFrame(request));
      const outcome = firstOutcome(stream);
      const end = endStatus(stream);
      expect(await outcome).toEqual({ live: true });
      const t0 = performance.now();
      expect(await end).toBe(0);
      reportFigures("reflection stream lifetime", { endedAfterMs: performance.now() - t0 });
      // Its slot is free again: 4 Watch streams fit on the connection.
      const watches = Array.from({ length: 4 }, () =>
        firstOutcome(grpcRequest(session, WATCH_PATH, EMPTY_MESSAGE)),
      );
      expect((await Promise.all(watches)).every((o) => o.live)).toBe(true);
    } finally {
      session.destroy();
    }
  });
});

describe("streams the client resets", () => {
  it("starts no handler (creates no session) for at most 1% of StartSessions reset right after their request", async () => {
    const users = Array.from({ length: 200 }, (_, i) => `reset-${i}`);
    const body = grpcFrame(
      toBinary(
        StartSessionRequestSchema,
        create(StartSessionRequestSchema, { quizId: quiz.quizId }),
      ),
    );
    const tokens = await Promise.all(users.map((u) => svc.token(u)));
    // 40 calls per connection, each reset as soon as it is sent: below any
    // reset-flood limit, so only "no handler for a reset call" can stop them.
    const perConnection = 40;
    for (let i = 0; i < users.length; i += perConnection) {
      const session = await h2Connect(svc.baseUrl);
      const streams = tokens.slice(i, i + perConnection).map((token) => {
        const stream = grpcRequest(
          session,
          "/practice.v1.PracticeSessionService/StartSession",
          body,
          { authorization: `Bearer ${token}` },
        );
        stream.close(h2.NGHTTP2_CANCEL);
        return endStatus(stream);
      });
      await Promise.all(streams);
      session.destroy();
    }
    // Give any handler that did start the time to finish its insert.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const created = await svc.db
      .selectFrom("practice_sessions")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("user_id", "like", "reset-%")
      .executeTakeFirstOrThrow();
    reportFigures("reset StartSession calls", { reset: users.length, created: Number(created.n) });
    // node:http2 sends each RST_STREAM right after the call's frames: by the
    // time the call has been read and its token checked, the reset has
    // arrived, and the admission interceptor starts no handler for it.
    // At most 1% may slip through.
    expect(Number(created.n)).toBeLessThanOrEqual(users.length / 100);
  });

  it("sends GOAWAY ENHANCE_YOUR_CALM to a connection that keeps resetting its streams", async () => {
    const session = await h2Connect(svc.baseUrl);
    const goaway = new Promise<number>((resolve) =>
      session.once("goaway", (code: number) => resolve(code)),
    );
    session.on("error", () => {});
    let sent = 0;
    // Bounded: 2,000 resets at most.
    while (sent < 2000 && !session.closed && !session.destroyed) {
      const stream = grpcRequest(session, WATCH_PATH, EMPTY_MESSAGE);
      stream.close(h2.NGHTTP2_CANCEL);
      sent++;
      if (sent % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    const code = await Promise.race([
      goaway,
      new Promise<string>((resolve) => setTimeout(() => resolve("no goaway"), 2000)),
    ]);
    session.destroy();
    reportFigures("reset flood on one connection", { resetsSent: sent, goaway: code });
    expect(code).toBe(h2.NGHTTP2_ENHANCE_YOUR_CALM);
  });

  it("answers a flood of resets sent in one write with GOAWAY ENHANCE_YOUR_CALM, not INTERNAL_ERROR, and keeps serving", async () => {
    const port = Number(new URL(svc.baseUrl).port);
    for (const streams of [300, 1500]) {
      const goaways = await rawResetFlood(port, streams);
      reportFigures("reset flood in one write", { streams, goaways });
      expect(goaways[0], `${streams} resets`).toBe(h2.NGHTTP2_ENHANCE_YOUR_CALM);
    }
    expect((await fetch(`${svc.baseUrl}/healthz`)).status).toBe(200);
  });
});
