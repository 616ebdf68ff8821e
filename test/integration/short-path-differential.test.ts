import { type ClientHttp2Session, connect, constants as h2 } from "node:http2";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import {
  create,
  type DescMessage,
  fromBinary,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CompleteSessionRequestSchema,
  GetSessionRequestSchema,
  ListSessionsRequestSchema,
  StartSessionRequestSchema,
  StartSessionResponseSchema,
  SubmitAnswerRequestSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import {
  GetQuizRequestSchema,
  ListQuizzesRequestSchema,
} from "../../gen/practice/v1/quiz_service_pb.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { signToken } from "../../src/auth/tokens.js";
import { FakeClock } from "../../src/domain/clock.js";
import { MAX_BODY_BYTES } from "../../src/limits.js";
import { type OnePortServer, servePort } from "../../src/one-port.js";
import { Admission, type Release } from "../../src/ops/admission.js";
import { buildServer } from "../../src/server.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { insertQuestion, insertQuiz } from "../support/fixtures.js";
import { TEST_SECRET } from "../support/service.js";

// The same gRPC calls, byte for byte, through the unary short path
// (rpc/grpc-short-path.ts) and through Connect's own handler: one database,
// one clock, two servers that differ only in RPC_SHORT_PATH.

const SESSIONS = "/practice.v1.PracticeSessionService";
const QUIZZES = "/practice.v1.QuizService";
const SLOTS = 4;

interface Side {
  url: string;
  /** Whether the app has the short path's gRPC route for ListSessions. */
  hasShortRoute: boolean;
  port: OnePortServer;
  admission: Admission;
  h2: ClientHttp2Session;
}

let database: TestDatabase;
const clock = new FakeClock(new Date("2026-05-01T10:00:00Z"));
let short: Side;
let plain: Side;

async function side(rpcShortPath: boolean): Promise<Side> {
  const admission = new Admission({
    maxInFlight: SLOTS,
    maxQueued: SLOTS,
    targetMs: 5,
    intervalMs: 100,
  });
  const app = await buildServer({
    db: database.db,
    pool: database.pool,
    clock,
    authenticator: createAuthenticator({ secret: TEST_SECRET }, clock),
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
    admission,
    rpcShortPath,
  });
  const port = servePort(app, false);
  await port.listen(0, "127.0.0.1");
  const url = `http://127.0.0.1:${(port.server.address() as AddressInfo).port}`;
  const hasShortRoute = app.hasRoute({
    method: "POST",
    url: `${SESSIONS}/ListSessions`,
    constraints: { grpcBinary: "binary" },
  });
  return { url, port, admission, hasShortRoute, h2: connect(url) };
}

beforeAll(async () => {
  database = await createTestDatabase();
  short = await side(true);
  plain = await side(false);
});
afterAll(async () => {
  for (const s of [short, plain]) {
    s?.h2.close();
    await s?.port.close(1000);
  }
  await database?.drop();
});

interface Exchange {
  status: number | undefined;
  headers: Record<string, unknown>;
  trailers: Record<string, unknown>;
  body: Buffer;
}

interface CallInit {
  user?: string | null;
  headers?: Record<string, string>;
  /** The request's message, already framed; default: one uncompressed envelope of `message`. */
  body?: Buffer;
}

const token = (user: string) => signToken(TEST_SECRET, user, { now: clock.now() });

/** One raw gRPC call: the response's status, headers, trailers and body bytes. */
async function call(s: Side, path: string, message: Uint8Array, init: CallInit = {}) {
  const headers: Record<string, string> = {
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
    ...init.headers,
  };
  const user = init.user === undefined ? "alice" : init.user;
  if (user !== null) headers.authorization = `Bearer ${await token(user)}`;
  const stream = s.h2.request(headers);
  const result: Exchange = { status: undefined, headers: {}, trailers: {}, body: Buffer.alloc(0) };
  const chunks: Buffer[] = [];
  return new Promise<Exchange>((resolve, reject) => {
    stream.on("response", (h) => {
      result.status = Number(h[":status"]);
      result.headers = withoutVolatile(h);
    });
    stream.on("trailers", (t) => {
      result.trailers = { ...t };
    });
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("error", reject);
    stream.on("close", () => {
      result.body = Buffer.concat(chunks);
      resolve(result);
    });
    stream.end(init.body ?? frame(message));
  });
}

/** The call's status: in the trailers, or in the headers of a trailers-only answer. */
const grpcStatus = (e: Exchange) => e.trailers["grpc-status"] ?? e.headers["grpc-status"];

function withoutVolatile(h: Record<string, unknown>): Record<string, unknown> {
  const { date: _date, ...rest } = h;
  return rest;
}

function frame(message: Uint8Array, flags = 0): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out[0] = flags;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

const bin = <D extends DescMessage>(schema: D, init: MessageInitShape<D>) =>
  toBinary(schema, create(schema, init));

/** Both sides' answers to the same call; generated request ids are left out unless sent. */
async function both(path: string, message: Uint8Array, init: CallInit = {}) {
  const [a, b] = [await call(short, path, message, init), await call(plain, path, message, init)];
  if (init.headers?.["x-request-id"] === undefined) {
    delete a.headers["x-request-id"];
    delete b.headers["x-request-id"];
  }
  return [a, b] as const;
}

async function same(path: string, message: Uint8Array, init: CallInit = {}) {
  const [a, b] = await both(path, message, init);
  expect(a).toEqual(b);
  return a;
}

let quiz: Awaited<ReturnType<typeof insertQuiz>>;
/** A session each side started for the same user and quiz state, ids swapped in the short side's answers. */
const sessions = { short: "", plain: "" };

/** The short side's exchange with its session id written as the plain side's (same length). */
function asPlain(e: Exchange): Exchange {
  const swap = (b: Buffer) =>
    Buffer.from(b.toString("latin1").replaceAll(sessions.short, sessions.plain), "latin1");
  return { ...e, body: swap(e.body) };
}

describe("gRPC unary: the short path answers exactly as Connect's handler", () => {
  beforeAll(async () => {
    quiz = await insertQuiz(database.db, { questions: 3 });
    const start = bin(StartSessionRequestSchema, { quizId: quiz.quizId });
    const a = await call(short, `${SESSIONS}/StartSession`, start, { user: "s-user" });
    const b = await call(plain, `${SESSIONS}/StartSession`, start, { user: "p-user" });
    sessions.short = fromBinary(StartSessionResponseSchema, a.body.subarray(5)).session?.id ?? "";
    sessions.plain = fromBinary(StartSessionResponseSchema, b.body.subarray(5)).session?.id ?? "";
    expect(sessions.short.length).toBe(sessions.plain.length);
    expect(asPlain(a)).toEqual({
      ...b,
      headers: { ...b.headers, "x-request-id": a.headers["x-request-id"] },
    });
  });

  /** A call on each side's own session: same answers once the ids are swapped. */
  async function onSessions(method: string, make: (id: string) => Uint8Array, init: CallInit = {}) {
    const a = await call(short, `${SESSIONS}/${method}`, make(sessions.short), {
      user: "s-user",
      ...init,
    });
    const b = await call(plain, `${SESSIONS}/${method}`, make(sessions.plain), {
      user: "p-user",
      ...init,
    });
    delete a.headers["x-request-id"];
    delete b.headers["x-request-id"];
    expect(asPlain(a)).toEqual(b);
    return b;
  }

  it("the setting adds the short path's routes, or leaves every call to Connect", () => {
    expect(short.hasShortRoute).toBe(true);
    expect(plain.hasShortRoute).toBe(false);
  });

  it("every unary method succeeds with the same bytes", async () => {
    const list = await same(
      `${SESSIONS}/ListSessions`,
      bin(ListSessionsRequestSchema, { quizId: quiz.quizId }),
    );
    expect(grpcStatus(list)).toBe("0");
    await same(`${QUIZZES}/ListQuizzes`, bin(ListQuizzesRequestSchema, {}));
    const got = await same(
      `${QUIZZES}/GetQuiz`,
      bin(GetQuizRequestSchema, { quizId: quiz.quizId }),
    );
    expect(grpcStatus(got)).toBe("0");
    const get = await onSessions("GetSession", (id) =>
      bin(GetSessionRequestSchema, { sessionId: id }),
    );
    expect(grpcStatus(get)).toBe("0");
    const answer = (id: string) =>
      bin(SubmitAnswerRequestSchema, {
        sessionId: id,
        questionId: quiz.questionIds[0],
        userAnswer: "A1",
      });
    expect((await onSessions("SubmitAnswer", answer)).trailers["grpc-status"]).toBe("0");
    // already_exists with the stored answer as a detail (grpc-status-details-bin).
    const other = (id: string) =>
      bin(SubmitAnswerRequestSchema, {
        sessionId: id,
        questionId: quiz.questionIds[0],
        userAnswer: "B",
      });
    const conflict = await onSessions("SubmitAnswer", other);
    expect(grpcStatus(conflict)).toBe("6");
    expect(conflict.trailers["grpc-status-details-bin"]).toBeDefined();
    const complete = (id: string) => bin(CompleteSessionRequestSchema, { sessionId: id });
    expect((await onSessions("CompleteSession", complete)).trailers["grpc-status"]).toBe("0");
    // failed_precondition: answering a completed session.
    const late = (id: string) =>
      bin(SubmitAnswerRequestSchema, {
        sessionId: id,
        questionId: quiz.questionIds[1],
        userAnswer: "A2",
      });
    expect((await onSessions("SubmitAnswer", late)).trailers["grpc-status"]).toBe("9");
  });

  it("the same errors: not_found, invalid_argument, unauthenticated", async () => {
    const missing = await same(
      `${SESSIONS}/GetSession`,
      bin(GetSessionRequestSchema, { sessionId: "00000000-0000-7000-8000-000000000000" }),
    );
    expect(grpcStatus(missing)).toBe("5");
    const bad = await same(
      `${SESSIONS}/ListSessions`,
      bin(ListSessionsRequestSchema, { quizId: quiz.quizId, limit: -1 }),
    );
    expect(grpcStatus(bad)).toBe("3");
    const anonymous = await same(
      `${SESSIONS}/ListSessions`,
      bin(ListSessionsRequestSchema, { quizId: quiz.quizId }),
      {
        user: null,
      },
    );
    expect(grpcStatus(anonymous)).toBe("16");
  });

  it("unavailable when admission sheds, deadline_exceeded while queued past grpc-timeout", async () => {
    const held: Release[] = [];
    for (const s of [short, plain]) {
      for (let i = 0; i < SLOTS; i++) held.push(await s.admission.acquire());
    }
    const queued: Promise<Release>[] = [];
    try {
      // Every slot busy: a call waits in the queue until its deadline.
      const late = await same(
        `${SESSIONS}/ListSessions`,
        bin(ListSessionsRequestSchema, { quizId: quiz.quizId }),
        {
          headers: { "grpc-timeout": "30m" },
        },
      );
      expect(grpcStatus(late)).toBe("4");
      // And the queue full too: refused at the door.
      for (const s of [short, plain]) {
        for (let i = 0; i < SLOTS; i++) queued.push(s.admission.acquire());
      }
      const shed = await same(
        `${SESSIONS}/ListSessions`,
        bin(ListSessionsRequestSchema, { quizId: quiz.quizId }),
      );
      expect(grpcStatus(shed)).toBe("14");
    } finally {
      for (const release of held) release();
      for (const release of await Promise.all(queued)) release();
    }
  });

  it("resource_exhausted for an oversized message, and bodies the short path leaves to Connect", async () => {
    const big = Buffer.alloc(MAX_BODY_BYTES + 10, 0x41);
    const huge = await same(`${SESSIONS}/ListSessions`, big, {
      body: frame(bin(ListSessionsRequestSchema, { cursor: big.toString("latin1") })),
    });
    expect(grpcStatus(huge)).toBe("8");
    // A message that does not parse: invalid_argument.
    const garbage = await same(`${SESSIONS}/ListSessions`, Buffer.from([0xff, 0xff, 0xff]));
    expect(grpcStatus(garbage)).toBe("3");
    // Two messages in a unary call, a truncated envelope, a bad grpc-timeout, an unknown encoding.
    const one = bin(ListSessionsRequestSchema, { quizId: quiz.quizId });
    await same(`${SESSIONS}/ListSessions`, one, { body: Buffer.concat([frame(one), frame(one)]) });
    await same(`${SESSIONS}/ListSessions`, one, { body: frame(one).subarray(0, 3) });
    await same(`${SESSIONS}/ListSessions`, one, { headers: { "grpc-timeout": "soon" } });
    await same(`${SESSIONS}/ListSessions`, one, {
      headers: { "grpc-encoding": "snappy" },
      body: frame(one, 1),
    });
  });

  it("custom metadata and compression: the request id echoed, gzip in, gzip accepted", async () => {
    const list = bin(ListSessionsRequestSchema, { quizId: quiz.quizId, limit: 5 });
    const echoed = await same(`${SESSIONS}/ListSessions`, list, {
      headers: { "x-request-id": "differential-1", "x-custom": "kept" },
    });
    expect(echoed.headers["x-request-id"]).toBe("differential-1");
    const gz = frame(gzipSync(list), 1);
    const variants: Record<string, string>[] = [
      { "grpc-encoding": "gzip" },
      { "grpc-encoding": "gzip", "grpc-accept-encoding": "gzip" },
      { "grpc-accept-encoding": "gzip" },
      { "grpc-accept-encoding": "br, gzip" },
      { "grpc-accept-encoding": "identity" },
    ];
    for (const headers of variants) {
      const body = headers["grpc-encoding"] ? gz : undefined;
      const out = await same(`${SESSIONS}/ListSessions`, list, { headers, body });
      expect(grpcStatus(out)).toBe("0");
    }
  });

  it("a response large enough to be compressed is compressed the same", async () => {
    const long = await insertQuiz(database.db, { questions: 0 });
    for (let i = 1; i <= 40; i++) {
      const id = await insertQuestion(database.db, long.quizId, i);
      await database.db
        .updateTable("questions")
        .set({ prompt: `${"x".repeat(2000)}${i}?` })
        .where("id", "=", id)
        .execute();
    }
    const init = { quizId: long.quizId };
    const out = await same(`${QUIZZES}/GetQuiz`, bin(GetQuizRequestSchema, init), {
      headers: { "grpc-accept-encoding": "gzip" },
    });
    expect(grpcStatus(out)).toBe("0");
    expect(out.headers["grpc-encoding"]).toBe("gzip");
    expect(out.body[0]).toBe(1);
  });

  it("Connect GET stays on Connect's route, the same in both modes", async () => {
    const message = Buffer.from(bin(GetQuizRequestSchema, { quizId: quiz.quizId })).toString(
      "base64url",
    );
    const path = `${QUIZZES}/GetQuiz?encoding=proto&base64=1&connect=v1&message=${message}`;
    const [a, b] = await Promise.all(
      [short, plain].map(async (s) => {
        const res = await fetch(`${s.url}${path}`, {
          headers: { authorization: `Bearer ${await token("alice")}` },
        });
        return {
          status: res.status,
          type: res.headers.get("content-type"),
          body: Buffer.from(await res.arrayBuffer()),
        };
      }),
    );
    expect(a).toEqual(b);
    expect(a?.status).toBe(200);
  });

  it.each(
    [
      "NO_ERROR",
      "PROTOCOL_ERROR",
      "INTERNAL_ERROR",
      "FLOW_CONTROL_ERROR",
      "SETTINGS_TIMEOUT",
      "STREAM_CLOSED",
      "FRAME_SIZE_ERROR",
      "REFUSED_STREAM",
      "CANCEL",
      "COMPRESSION_ERROR",
      "CONNECT_ERROR",
      "ENHANCE_YOUR_CALM",
      "INADEQUATE_SECURITY",
      "HTTP_1_1_REQUIRED",
    ].map((name) => [name, h2[`NGHTTP2_${name}` as keyof typeof h2] as number]),
  )(
    "a client RST_STREAM %s right after the request: the same sessions, a healthy server",
    async (_name, code) => {
      const created: number[] = [];
      for (const s of [short, plain]) {
        const user = `rst-${code}-${s === short ? "short" : "plain"}`;
        const stream = s.h2.request({
          ":method": "POST",
          ":path": `${SESSIONS}/StartSession`,
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${await token(user)}`,
        });
        stream.on("error", () => {});
        stream.end(frame(bin(StartSessionRequestSchema, { quizId: quiz.quizId })));
        stream.close(code);
        await new Promise((resolve) => stream.on("close", resolve));
        // Whatever the call did, it is done once the server answers the next one.
        const next = await call(
          s,
          `${SESSIONS}/ListSessions`,
          bin(ListSessionsRequestSchema, { quizId: quiz.quizId }),
          {
            user,
          },
        );
        expect(grpcStatus(next)).toBe("0");
        const rows = await database.db
          .selectFrom("practice_sessions")
          .select("id")
          .where("user_id", "=", user)
          .execute();
        created.push(rows.length);
      }
      expect(created[0]).toBe(created[1]);
    },
  );
});
