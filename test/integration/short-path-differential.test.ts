import { type ClientHttp2Session, connect, constants as h2, sensitiveHeaders } from "node:http2";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import {
  create,
  type DescMessage,
  fromBinary,
  fromJsonString,
  type MessageInitShape,
  toBinary,
  toJsonString,
} from "@bufbuild/protobuf";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { ConnectError } from "@connectrpc/connect";
import { errorFromJsonBytes } from "@connectrpc/connect/protocol-connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  CompleteSessionRequestSchema,
  GetSessionRequestSchema,
  ListDueQuestionsRequestSchema,
  ListDueQuestionsResponseSchema,
  ListSessionsRequestSchema,
  SessionMode,
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
import { admissionConfig } from "../../src/config.js";
import { FakeClock } from "../../src/domain/clock.js";
import { H2_CODE_NAMES } from "../../src/edge/call.js";
import { type OnePortServer, servePort } from "../../src/edge/one-port.js";
import { MAX_BODY_BYTES } from "../../src/limits.js";
import { Admission, type Release } from "../../src/ops/admission.js";
import { buildApp } from "../../src/server.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { insertQuestion, insertQuiz } from "../support/fixtures.js";
import { TEST_SECRET } from "../support/service.js";
import { defaultAppSettings } from "../support/settings.js";

// The same unary calls (gRPC, Connect JSON, Connect binary), byte for byte,
// through our own paths (gRPC on HTTP/2's stream API, rpc/grpc-streams.ts;
// Connect on Fastify's short path, rpc/unary-short-path.ts) and through
// Connect's own handler: one database, one clock, two servers that differ
// only in RPC_SHORT_PATH. Date headers aside (Node's compatibility layer adds
// one, grpc-js does not), and how HPACK carries x-request-id (never indexed
// on the stream path, which Node's client shows as http2.sensitiveHeaders),
// the only difference allowed is who answered.

const SESSIONS = "/practice.v1.PracticeSessionService";
const QUIZZES = "/practice.v1.QuizService";
const SLOTS = 4;

interface Side {
  url: string;
  /** Which of the short path's routes for ListSessions the app has. */
  shortRoutes: string[];
  port: OnePortServer;
  admission: Admission;
  h2: ClientHttp2Session;
  /** Which handler answered each call that took a short-path route, in order. */
  served: string[];
}

/**
 * Who answered a call on the side with our paths: the stream path (gRPC), the short path
 * (Connect), Connect's handler behind either, or neither (refused at the door, or on neither path).
 */
type Answerer = "grpc stream" | "short path" | "connect" | "neither";

let database: TestDatabase;
const clock = new FakeClock(new Date("2026-05-01T10:00:00Z"));
let short: Side;
let plain: Side;

async function side(rpcShortPath: boolean): Promise<Side> {
  const admission = new Admission({
    ...admissionConfig({}, SLOTS),
    maxQueued: SLOTS,
    maxQueuedPerUser: 2 * SLOTS,
  });
  const served: string[] = [];
  const app = await buildApp({
    ...defaultAppSettings(),
    db: database.db,
    pool: database.pool,
    onShortPathServed: (by) => served.push(by),
    clock,
    authenticator: createAuthenticator({ secret: TEST_SECRET }, clock),
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
    admission,
    rpcShortPath,
  });
  const port = servePort(app);
  await port.listen(0, "127.0.0.1");
  const url = `http://127.0.0.1:${(port.server.address() as AddressInfo).port}`;
  const shortRoutes = ["connect"].filter((protocol) =>
    app.hasRoute({
      method: "POST",
      url: `${SESSIONS}/ListSessions`,
      constraints: { unaryShortPath: protocol },
    }),
  );
  if (app.streamPath !== null) shortRoutes.push("grpc stream");
  return { url, port, admission, shortRoutes, h2: connect(url), served };
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

type Protocol = "grpc" | "connect-json" | "connect-proto";
const PROTOCOLS: Protocol[] = ["grpc", "connect-json", "connect-proto"];
const CONTENT_TYPE: Record<Protocol, string> = {
  grpc: "application/grpc",
  "connect-json": "application/json",
  "connect-proto": "application/proto",
};

/** A request message in both encodings. */
interface Msg {
  binary: Uint8Array;
  json: Uint8Array;
}

interface CallInit {
  protocol?: Protocol;
  user?: string | null;
  headers?: Record<string, string>;
  /** The request body as sent; default: `message` encoded (and for gRPC framed) as `protocol` says. */
  body?: Buffer;
}

const token = (user: string) => signToken(TEST_SECRET, user, { now: clock.now() });

/** One raw unary call over HTTP/2: the response's status, headers, trailers and body bytes. */
async function call(s: Side, path: string, message: Msg | Uint8Array, init: CallInit = {}) {
  const protocol = init.protocol ?? "grpc";
  const headers: Record<string, string> = {
    ":method": "POST",
    ":path": path,
    "content-type": CONTENT_TYPE[protocol],
    ...(protocol === "grpc" ? { te: "trailers" } : {}),
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
    stream.end(init.body ?? encode(message, protocol));
  });
}

function encode(message: Msg | Uint8Array, protocol: Protocol): Buffer {
  const bytes =
    message instanceof Uint8Array
      ? message
      : protocol === "connect-json"
        ? message.json
        : message.binary;
  return protocol === "grpc" ? frame(bytes) : Buffer.from(bytes);
}

/** The call's status: in the trailers, or in the headers of a trailers-only answer. */
const grpcStatus = (e: Exchange) => e.trailers["grpc-status"] ?? e.headers["grpc-status"];

const CODES = [
  "ok",
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
];

/** The call's code, whichever protocol answered: gRPC's status, or Connect's error JSON. */
function codeOf(e: Exchange): string {
  const grpc = grpcStatus(e);
  if (grpc !== undefined) return CODES[Number(grpc)] ?? String(grpc);
  if (e.status === 200) return "ok";
  return (JSON.parse(e.body.toString("utf8")) as { code: string }).code;
}

function withoutVolatile(h: Record<string, unknown>): Record<string, unknown> {
  const {
    date: _date,
    [sensitiveHeaders]: _encoding,
    ...rest
  } = h as Record<string | symbol, unknown>;
  return rest;
}

function frame(message: Uint8Array, flags = 0): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out[0] = flags;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

function msg<D extends DescMessage>(schema: D, init: MessageInitShape<D>): Msg {
  const message = create(schema, init);
  return {
    binary: toBinary(schema, message),
    json: Buffer.from(toJsonString(schema, message)),
  };
}

/** The fields an error's buf.validate.Violations detail names, from any protocol's answer. */
function violatedFields(e: Exchange, protocol: Protocol): string[] {
  const fields = Object.entries({ ...e.headers, ...e.trailers }).filter(
    (entry): entry is [string, string] => typeof entry[1] === "string",
  );
  const err: ConnectError | undefined =
    protocol === "grpc"
      ? findTrailerError(new Headers(fields))
      : errorFromJsonBytes(e.body, undefined, new ConnectError("not an error"));
  const [violations] = err?.findDetails(ViolationsSchema) ?? [];
  return (violations?.violations ?? []).map((v) => v.field?.elements[0]?.fieldName ?? "");
}

/** A response message, decoded from any protocol's body. */
function decode<D extends DescMessage>(schema: D, e: Exchange, protocol: Protocol) {
  if (protocol === "grpc") return fromBinary(schema, e.body.subarray(5));
  if (protocol === "connect-proto") return fromBinary(schema, e.body);
  return fromJsonString(schema, e.body.toString("utf8"));
}

/** Both sides' answers to the same call; generated request ids are left out unless sent. */
async function both(path: string, message: Msg | Uint8Array, init: CallInit = {}) {
  short.served.length = 0;
  const [a, b] = [await call(short, path, message, init), await call(plain, path, message, init)];
  if (init.headers?.["x-request-id"] === undefined) {
    delete a.headers["x-request-id"];
    delete b.headers["x-request-id"];
  }
  expect(plain.served).toEqual([]);
  const by: Answerer = (short.served.at(-1) as Answerer | undefined) ?? "neither";
  return [a, b, by] as const;
}

/** Both sides answer alike, and on our paths' side `by` answered (by default, our path of the protocol). */
async function same(
  path: string,
  message: Msg | Uint8Array,
  init: CallInit = {},
  by: Answerer = (init.protocol ?? "grpc") === "grpc" ? "grpc stream" : "short path",
) {
  const [a, b, answerer] = await both(path, message, init);
  expect(a).toEqual(b);
  expect(answerer).toBe(by);
  return a;
}

let quiz: Awaited<ReturnType<typeof insertQuiz>>;
beforeAll(async () => {
  quiz = await insertQuiz(database.db, { questions: 3 });
});

it("the setting adds our paths (Connect's short routes, the gRPC stream path), or leaves every call to Connect", () => {
  expect(short.shortRoutes).toEqual(["connect", "grpc stream"]);
  expect(plain.shortRoutes).toEqual([]);
});

describe.each(PROTOCOLS)("%s: the short path answers exactly as Connect's handler", (protocol) => {
  /** A session each side started for the same user and quiz state. */
  const sessions = { short: "", plain: "" };
  const users = { short: `s-${protocol}`, plain: `p-${protocol}` };
  const as = { protocol };

  /** The short side's exchange with its session id written as the plain side's (same length). */
  function asPlain(e: Exchange): Exchange {
    const swap = (b: Buffer) =>
      Buffer.from(b.toString("latin1").replaceAll(sessions.short, sessions.plain), "latin1");
    return { ...e, body: swap(e.body) };
  }

  beforeAll(async () => {
    const start = msg(StartSessionRequestSchema, { quizId: quiz.quizId });
    const a = await call(short, `${SESSIONS}/StartSession`, start, { ...as, user: users.short });
    const b = await call(plain, `${SESSIONS}/StartSession`, start, { ...as, user: users.plain });
    sessions.short = decode(StartSessionResponseSchema, a, protocol).session?.id ?? "";
    sessions.plain = decode(StartSessionResponseSchema, b, protocol).session?.id ?? "";
    expect(sessions.short.length).toBe(sessions.plain.length);
    expect(asPlain(a)).toEqual({
      ...b,
      headers: { ...b.headers, "x-request-id": a.headers["x-request-id"] },
    });
  });

  /** A call on each side's own session: same answers once the ids are swapped. */
  async function onSessions(method: string, make: (id: string) => Msg, init: CallInit = {}) {
    const a = await call(short, `${SESSIONS}/${method}`, make(sessions.short), {
      ...as,
      user: users.short,
      ...init,
    });
    const b = await call(plain, `${SESSIONS}/${method}`, make(sessions.plain), {
      ...as,
      user: users.plain,
      ...init,
    });
    delete a.headers["x-request-id"];
    delete b.headers["x-request-id"];
    expect(asPlain(a)).toEqual(b);
    return b;
  }

  it("the handler's signal aborts once the call has been answered, as Connect's does", async () => {
    /** The signal each side's handler ran with: admission runs the handler's work under it. */
    const signals = new Map<Side, AbortSignal>();
    const restore = [short, plain].map((s) => {
      const run = s.admission.run.bind(s.admission);
      s.admission.run = (slot, work) => {
        if (slot.signal) signals.set(s, slot.signal);
        return run(slot, work);
      };
      return () => {
        s.admission.run = run;
      };
    });
    try {
      await same(
        `${SESSIONS}/ListSessions`,
        msg(ListSessionsRequestSchema, { quizId: quiz.quizId }),
        as,
      );
    } finally {
      for (const r of restore) r();
    }
    for (const s of [short, plain]) {
      const signal = signals.get(s);
      expect(signal, s === short ? "our path" : "connect").toBeInstanceOf(AbortSignal);
      await expect.poll(() => signal?.aborted).toBe(true);
    }
  });

  it("every unary method succeeds with the same bytes", async () => {
    const list = await same(
      `${SESSIONS}/ListSessions`,
      msg(ListSessionsRequestSchema, { quizId: quiz.quizId }),
      as,
    );
    expect(codeOf(list)).toBe("ok");
    expect(
      codeOf(await same(`${QUIZZES}/ListQuizzes`, msg(ListQuizzesRequestSchema, {}), as)),
    ).toBe("ok");
    const got = await same(
      `${QUIZZES}/GetQuiz`,
      msg(GetQuizRequestSchema, { quizId: quiz.quizId }),
      as,
    );
    expect(codeOf(got)).toBe("ok");
    const get = await onSessions("GetSession", (id) =>
      msg(GetSessionRequestSchema, { sessionId: id }),
    );
    expect(codeOf(get)).toBe("ok");
    const answer = (id: string) =>
      msg(SubmitAnswerRequestSchema, {
        sessionId: id,
        questionId: quiz.questionIds[0],
        userAnswer: "A1",
      });
    expect(codeOf(await onSessions("SubmitAnswer", answer))).toBe("ok");
    // The same answer again: a retry, answered as the first.
    expect(codeOf(await onSessions("SubmitAnswer", answer))).toBe("ok");
    // already_exists with the stored answer as a detail.
    const other = (id: string) =>
      msg(SubmitAnswerRequestSchema, {
        sessionId: id,
        questionId: quiz.questionIds[0],
        userAnswer: "B",
      });
    const conflict = await onSessions("SubmitAnswer", other);
    expect(codeOf(conflict)).toBe("already_exists");
    if (protocol === "grpc") expect(conflict.trailers["grpc-status-details-bin"]).toBeDefined();
    else expect(conflict.body.toString()).toContain("practice.v1.AnswerConflict");
    const complete = (id: string) => msg(CompleteSessionRequestSchema, { sessionId: id });
    expect(codeOf(await onSessions("CompleteSession", complete))).toBe("ok");
    // failed_precondition: answering a completed session.
    const late = (id: string) =>
      msg(SubmitAnswerRequestSchema, {
        sessionId: id,
        questionId: quiz.questionIds[1],
        userAnswer: "A2",
      });
    expect(codeOf(await onSessions("SubmitAnswer", late))).toBe("failed_precondition");
    // Review: both users answered the same at the same (fake) time, so their
    // memories match. Nothing is due yet: failed_precondition with NothingDue.
    const review = () =>
      msg(StartSessionRequestSchema, { quizId: quiz.quizId, mode: SessionMode.REVIEW });
    const nothingDue = await onSessions("StartSession", review);
    expect(codeOf(nothingDue)).toBe("failed_precondition");
    if (protocol === "grpc") expect(nothingDue.trailers["grpc-status-details-bin"]).toBeDefined();
    else expect(nothingDue.body.toString()).toContain("practice.v1.NothingDue");
    const due = () => msg(ListDueQuestionsRequestSchema, { quizId: quiz.quizId });
    expect(codeOf(await onSessions("ListDueQuestions", due))).toBe("ok");
    clock.advance(11 * 60_000);
    // The answered question (Good: ten minutes) and the two left unanswered at completion (Again).
    const dueNow = await onSessions("ListDueQuestions", due);
    expect(decode(ListDueQuestionsResponseSchema, dueNow, protocol).dueCount).toBe(3);
    // A page of the due list, and the missed-questions start: the same on both paths.
    const page = () => msg(ListDueQuestionsRequestSchema, { quizId: quiz.quizId, limit: 2 });
    const firstPage = decode(
      ListDueQuestionsResponseSchema,
      await onSessions("ListDueQuestions", page),
      protocol,
    );
    expect([firstPage.questions.length, firstPage.nextCursor !== ""]).toEqual([2, true]);
    // A missed start creates a session of its own on each side (new ids): the same mode and snapshot.
    const missed = msg(StartSessionRequestSchema, {
      quizId: quiz.quizId,
      mode: SessionMode.MISSED,
    });
    const started = await Promise.all(
      ([short, plain] as const).map(async (side) =>
        decode(
          StartSessionResponseSchema,
          await call(side, `${SESSIONS}/StartSession`, missed, {
            ...as,
            user: side === short ? users.short : users.plain,
          }),
          protocol,
        ),
      ),
    );
    for (const s of started) {
      expect([s.created, s.session?.mode]).toEqual([true, SessionMode.MISSED]);
      expect(s.questions.map((q) => q.questionId)).toEqual(quiz.questionIds.slice(1));
    }
  });

  it("the same errors: not_found, invalid_argument, unauthenticated, a message that does not parse", async () => {
    const missing = await same(
      `${SESSIONS}/GetSession`,
      msg(GetSessionRequestSchema, { sessionId: "00000000-0000-7000-8000-000000000000" }),
      as,
    );
    expect(codeOf(missing)).toBe("not_found");
    const bad = await same(
      `${SESSIONS}/ListSessions`,
      msg(ListSessionsRequestSchema, { quizId: quiz.quizId, limit: -1 }),
      as,
    );
    expect(codeOf(bad)).toBe("invalid_argument");
    // Three mistakes: one refusal naming each, in the same bytes (gRPC's status details, Connect's JSON).
    const three = await same(
      `${SESSIONS}/SubmitAnswer`,
      msg(SubmitAnswerRequestSchema, {
        sessionId: "",
        questionId: "",
        userAnswer: "x".repeat(1001),
      }),
      as,
    );
    expect(violatedFields(three, protocol)).toEqual(["session_id", "question_id", "user_answer"]);
    // Without a token: refused at the door, before either handler.
    const anonymous = await same(
      `${SESSIONS}/ListSessions`,
      msg(ListSessionsRequestSchema, { quizId: quiz.quizId }),
      { ...as, user: null },
      "neither",
    );
    expect(codeOf(anonymous)).toBe("unauthenticated");
    const garbage =
      protocol === "connect-json" ? Buffer.from("{") : Buffer.from([0xff, 0xff, 0xff]);
    expect(codeOf(await same(`${SESSIONS}/ListSessions`, garbage, as))).toBe("invalid_argument");
  });

  it("unavailable when admission sheds, deadline_exceeded while queued past the call's timeout", async () => {
    const held: Release[] = [];
    for (const s of [short, plain]) {
      for (let i = 0; i < SLOTS; i++) held.push(await s.admission.acquire());
    }
    const queued: Promise<Release>[] = [];
    const timeout: Record<string, string> =
      protocol === "grpc" ? { "grpc-timeout": "30m" } : { "connect-timeout-ms": "30" };
    try {
      // Every slot busy: a call waits in the queue until its deadline.
      const late = await same(
        `${SESSIONS}/ListSessions`,
        msg(ListSessionsRequestSchema, { quizId: quiz.quizId }),
        { ...as, headers: timeout },
      );
      expect(codeOf(late)).toBe("deadline_exceeded");
      // And the queue full too, of the caller's own calls: refused at the door.
      for (const s of [short, plain]) {
        for (let i = 0; i < SLOTS; i++)
          queued.push(s.admission.acquire(undefined, "", "user:alice"));
      }
      const shed = await same(
        `${SESSIONS}/ListSessions`,
        msg(ListSessionsRequestSchema, { quizId: quiz.quizId }),
        as,
        "neither",
      );
      expect(codeOf(shed)).toBe("unavailable");
    } finally {
      for (const release of held) release();
      for (const release of await Promise.all(queued)) release();
    }
  });

  it("resource_exhausted for an oversized message", async () => {
    const cursor = "A".repeat(MAX_BODY_BYTES + 10);
    const huge = await same(
      `${SESSIONS}/ListSessions`,
      msg(ListSessionsRequestSchema, { quizId: quiz.quizId, cursor }),
      as,
      "connect",
    );
    expect(codeOf(huge)).toBe("resource_exhausted");
  });

  it("custom metadata and compression: the request id echoed, gzip in, gzip accepted", async () => {
    const list = msg(ListSessionsRequestSchema, { quizId: quiz.quizId, limit: 5 });
    const echoed = await same(`${SESSIONS}/ListSessions`, list, {
      ...as,
      headers: { "x-request-id": "differential-1", "x-custom": "kept" },
    });
    expect(echoed.headers["x-request-id"]).toBe("differential-1");
    const grpc = protocol === "grpc";
    const plainBody = encode(list, protocol);
    const gz = grpc ? frame(gzipSync(list.binary), 1) : gzipSync(plainBody);
    const [encoding, accept] = grpc
      ? ["grpc-encoding", "grpc-accept-encoding"]
      : ["content-encoding", "accept-encoding"];
    const variants: Record<string, string>[] = [
      { [encoding]: "gzip" },
      { [encoding]: "gzip", [accept]: "gzip" },
      { [accept]: "gzip" },
      { [accept]: "br, gzip" },
      { [accept]: "identity" },
    ];
    for (const headers of variants) {
      const body = headers[encoding] ? gz : undefined;
      const out = await same(`${SESSIONS}/ListSessions`, list, { ...as, headers, body });
      expect(codeOf(out)).toBe("ok");
    }
    // An encoding the server does not know, and bytes that are not what the encoding says.
    await same(
      `${SESSIONS}/ListSessions`,
      list,
      { ...as, headers: { [encoding]: "snappy" } },
      "connect",
    );
    const notGzip = grpc ? frame(Buffer.from("not gzip"), 1) : Buffer.from("not gzip");
    const broken = await same(
      `${SESSIONS}/ListSessions`,
      list,
      { ...as, headers: { [encoding]: "gzip" }, body: notGzip },
      "connect",
    );
    expect(codeOf(broken)).not.toBe("ok");
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
    const grpc = protocol === "grpc";
    const out = await same(
      `${QUIZZES}/GetQuiz`,
      msg(GetQuizRequestSchema, { quizId: long.quizId }),
      {
        ...as,
        headers: { [grpc ? "grpc-accept-encoding" : "accept-encoding"]: "gzip" },
      },
    );
    expect(codeOf(out)).toBe("ok");
    expect(out.headers[grpc ? "grpc-encoding" : "content-encoding"]).toBe("gzip");
  });

  it.each(H2_CODE_NAMES.map((name) => [name, h2[`NGHTTP2_${name}` as keyof typeof h2] as number]))(
    "a client RST_STREAM %s right after the request's message, before its end: no session on either path, a healthy server",
    async (_name, code) => {
      const created: number[] = [];
      for (const s of [short, plain]) {
        const user = `rst-${protocol}-${code}-${s === short ? "short" : "plain"}`;
        const stream = s.h2.request({
          ":method": "POST",
          ":path": `${SESSIONS}/StartSession`,
          "content-type": CONTENT_TYPE[protocol],
          te: "trailers",
          authorization: `Bearer ${await token(user)}`,
        });
        stream.on("error", () => {});
        // The whole message, but not the stream's end: with its end sent, whether
        // the work begins before the reset is read is a race of timing, not of path.
        stream.write(encode(msg(StartSessionRequestSchema, { quizId: quiz.quizId }), protocol));
        stream.close(code);
        await new Promise((resolve) => stream.on("close", resolve));
        // Whatever the call did, it is done once the server answers the next one.
        const next = await call(
          s,
          `${SESSIONS}/ListSessions`,
          msg(ListSessionsRequestSchema, { quizId: quiz.quizId }),
          { ...as, user },
        );
        expect(codeOf(next)).toBe("ok");
        const rows = await database.db
          .selectFrom("practice_sessions")
          .select("id")
          .where("user_id", "=", user)
          .execute();
        created.push(rows.length);
      }
      expect(created).toEqual([0, 0]);
    },
  );
});

describe("gRPC: bodies the stream path leaves to Connect's handler", () => {
  it("two messages in a unary call, a truncated envelope, a bad grpc-timeout, a compressed frame without an encoding", async () => {
    const one = msg(ListSessionsRequestSchema, { quizId: quiz.quizId });
    const framed = frame(one.binary);
    const path = `${SESSIONS}/ListSessions`;
    await same(path, one, { body: Buffer.concat([framed, framed]) }, "connect");
    await same(path, one, { body: framed.subarray(0, 3) }, "connect");
    await same(path, one, { headers: { "grpc-timeout": "soon" } }, "connect");
    await same(path, one, { body: frame(one.binary, 1) }, "connect");
  });

  it("Connect GET stays on Connect's route, the same in both modes", async () => {
    const message = Buffer.from(msg(GetQuizRequestSchema, { quizId: quiz.quizId }).binary).toString(
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
});

describe("gRPC: what the stream path leaves to Fastify's path, and what it answers before any handler", () => {
  it("an unknown method, a browser's call (origin): the same bytes", async () => {
    const list = msg(ListSessionsRequestSchema, { quizId: quiz.quizId });
    const unknown = await same(`${SESSIONS}/Nope`, list, {}, "neither");
    // No route: the gateway's 404, whichever path, as before.
    expect(codeOf(unknown)).toBe("not_found");
    const browser = await same(
      `${SESSIONS}/ListSessions`,
      list,
      { headers: { origin: "https://app.example.com" } },
      "neither",
    );
    expect(codeOf(browser)).toBe("ok");
  });

  it("a deadline that passes while the request still arrives: deadline_exceeded, trailers-only, on both", async () => {
    const answers = await Promise.all(
      [short, plain].map(async (s) => {
        const stream = s.h2.request({
          ":method": "POST",
          ":path": `${SESSIONS}/ListSessions`,
          "content-type": "application/grpc",
          te: "trailers",
          "grpc-timeout": "200m",
          authorization: `Bearer ${await token("alice")}`,
        });
        stream.on("error", () => {});
        // Half an envelope, and no more.
        stream.write(Buffer.from([0, 0, 0, 0, 9]));
        return new Promise<Record<string, unknown>>((resolve) => {
          stream.once("response", (h) => resolve(withoutVolatile(h)));
        });
      }),
    );
    const [a, b] = answers;
    expect(a).toEqual(b);
    expect(a?.["grpc-status"]).toBe("4");
  });
});

describe("gRPC: a client that leaves", () => {
  it.each([
    ["the stream path", () => short],
    ["Connect's handler", () => plain],
  ])(
    "before its body has all come (%s): no handler builds an answer, none reports a failure",
    async (_, side) => {
      const { h2, served } = side();
      served.length = 0;
      const reported = vi.spyOn(console, "error").mockImplementation(() => {});
      try {
        const stream = h2.request({
          ":method": "POST",
          ":path": `${SESSIONS}/ListSessions`,
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${await token("alice")}`,
        });
        stream.on("error", () => {});
        // An envelope announcing 256 bytes, none of which come.
        stream.write(Buffer.from([0, 0, 0, 1, 0]));
        await new Promise((resolve) => setTimeout(resolve, 200));
        // RST_STREAM CANCEL with the body unfinished (`close()` would end the body first).
        stream.destroy();
        await new Promise((resolve) => stream.once("close", resolve));
        // Time for a handler to run, had one been started.
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(served).toEqual([]);
        expect(reported.mock.calls).toEqual([]);
      } finally {
        reported.mockRestore();
      }
    },
  );
});

describe("Connect: what JSON and HTTP/1.1 callers send", () => {
  const json = { protocol: "connect-json" as const };
  const list = () => msg(ListSessionsRequestSchema, { quizId: quiz.quizId });

  it("content types Connect accepts, unknown fields, text that is not UTF-8, a bad connect-timeout-ms", async () => {
    for (const type of [
      "application/json; charset=utf-8",
      "Application/JSON",
      "application/json;charset=utf8",
    ]) {
      const out = await same(`${SESSIONS}/ListSessions`, list(), {
        ...json,
        headers: { "content-type": type },
      });
      expect(codeOf(out)).toBe("ok");
    }
    const unknown = Buffer.from(JSON.stringify({ quizId: quiz.quizId, comingSoon: 1 }));
    expect(codeOf(await same(`${SESSIONS}/ListSessions`, unknown, json))).toBe("ok");
    const wrongType = Buffer.from(JSON.stringify({ quizId: 7 }));
    expect(codeOf(await same(`${SESSIONS}/ListSessions`, wrongType, json))).toBe(
      "invalid_argument",
    );
    const latin1 = Buffer.from(`{"quizId":"${quiz.quizId}","cursor":"caf\xe9"}`, "latin1");
    expect(codeOf(await same(`${SESSIONS}/ListSessions`, latin1, json))).toBe("invalid_argument");
    const empty = await same(`${SESSIONS}/ListSessions`, Buffer.alloc(0), json);
    expect(codeOf(empty)).toBe("invalid_argument");
    await same(
      `${SESSIONS}/ListSessions`,
      list(),
      { ...json, headers: { "connect-timeout-ms": "soon" } },
      "connect",
    );
  });

  it("over HTTP/1.1: the same status, headers and bytes", async () => {
    const exchange = async (s: Side, body: Uint8Array, headers: Record<string, string> = {}) => {
      const res = await fetch(`${s.url}${SESSIONS}/ListSessions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${await token("alice")}`,
          ...headers,
        },
        body,
      });
      const h = Object.fromEntries(res.headers);
      delete h.date;
      delete h["x-request-id"];
      return { status: res.status, headers: h, body: Buffer.from(await res.arrayBuffer()) };
    };
    const cases: [Uint8Array, Record<string, string>?][] = [
      [list().json],
      [msg(ListSessionsRequestSchema, { quizId: quiz.quizId, limit: -1 }).json],
      [Buffer.from("{")],
      [list().json, { "accept-encoding": "gzip", origin: "http://example.test" }],
      [gzipSync(list().json), { "content-encoding": "gzip" }],
    ];
    for (const [body, headers] of cases) {
      expect(await exchange(short, body, headers)).toEqual(await exchange(plain, body, headers));
    }
  });
});
