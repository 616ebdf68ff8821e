import { request as httpRequest } from "node:http";
import { connect as connectHttp2, constants as h2 } from "node:http2";
import { connect as netConnect } from "node:net";
import { Writable } from "node:stream";
import { createConnection } from "mysql2/promise";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { edgeConfig } from "../../src/config.js";
import { REQUEST_HEAD_TIMEOUT_MS } from "../../src/limits.js";
import { testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import {
  EMPTY_MESSAGE,
  firstOutcome,
  grpcRequest,
  h2Connect,
  h2Frame,
  headerBlock,
  rawH2,
  rawResetFlood,
  WATCH_PATH,
} from "../support/h2-raw.js";
import { sleep } from "../support/load.js";
import { reportFigures, tally } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * What one connection may cost the service, from outside over loopback:
 * the port (sessions that never ask, idle connections near the cap), the
 * memory (answers a client never reads) and the CPU (bodies in tiny pieces,
 * resets). The chaos suite runs the same at the scale.
 */

/** A quiz whose GetQuiz answer is about 280 KB: 100 questions of 2,800 characters. */
async function bigQuiz(svc: TestService): Promise<QuizFixture> {
  const quiz = await insertQuiz(svc.db, { questions: 100 });
  await svc.db
    .updateTable("questions")
    .set({ prompt: "p".repeat(2800) })
    .where("quiz_id", "=", quiz.quizId)
    .execute();
  return quiz;
}

describe("a session must earn its slot", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ maxConnections: 100 });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("closes an HTTP/2 session that opens no stream within the head timeout", async () => {
    const t0 = performance.now();
    const conn = rawH2(Number(new URL(svc.baseUrl).port));
    await conn.closed;
    const closedAfter = performance.now() - t0;
    reportFigures("preface-only session", { closedAfterMs: Math.round(closedAfter) });
    // The server's SETTINGS came, then nothing but the close.
    expect(conn.frames[0]?.type).toBe(4);
    // Bounds, not a speed target: at the head timeout, not before, not much after.
    expect(closedAfter).toBeGreaterThanOrEqual(REQUEST_HEAD_TIMEOUT_MS - 100);
    expect(closedAfter).toBeLessThan(REQUEST_HEAD_TIMEOUT_MS + 2000);
  }, 15_000);

  it("near the connection cap, lets a new caller in by closing the connections idle longest, never a busy one", async () => {
    const port = Number(new URL(svc.baseUrl).port);
    // A connection busy with a Watch stream, opened first: the oldest of all.
    const busy = await h2Connect(svc.baseUrl);
    const watch = grpcRequest(busy, WATCH_PATH, EMPTY_MESSAGE);
    expect(await firstOutcome(watch)).toEqual({ live: true });
    // Then sessions that never ask, up to the cap.
    const idle = [];
    for (let i = 0; i < 99; i++) {
      idle.push(rawH2(port));
      await sleep(2);
    }
    await sleep(300);
    const status = await new Promise<number>((resolve) => {
      const req = httpRequest(`${svc.baseUrl}/healthz`, { agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.once("error", () => resolve(0));
      req.end();
    });
    const closed = await Promise.all(
      idle.map((c) => Promise.race([c.closed.then(() => true), sleep(50).then(() => false)])),
    );
    const firstOpen = closed.indexOf(false);
    reportFigures("connection cap 100, 100 held", {
      healthz: status,
      idleClosed: closed.filter(Boolean).length,
      firstStillOpen: firstOpen,
      busyAlive: !busy.destroyed && !busy.closed,
    });
    expect(status).toBe(200);
    // 90 of the cap held, the rest closed oldest first: a prefix of the idle ones.
    expect(closed.filter(Boolean).length).toBeGreaterThanOrEqual(10);
    expect(closed.slice(0, firstOpen).every(Boolean)).toBe(true);
    expect(closed.slice(firstOpen).some(Boolean)).toBe(false);
    expect(busy.destroyed || busy.closed).toBe(false);
    for (const c of idle) c.socket.destroy();
    busy.destroy();
  });

  it("answers /healthz and /readyz on the metrics port too", async () => {
    const health = await fetch(`${svc.metricsUrl}/healthz`);
    const ready = await fetch(`${svc.metricsUrl}/readyz`);
    expect([health.status, await health.json()]).toEqual([200, { status: "ok" }]);
    expect([ready.status, await ready.json()]).toEqual([200, { status: "ready" }]);
  });
});

describe("bounded unsent bytes", () => {
  let svc: TestService;
  let quiz: QuizFixture;
  beforeAll(async () => {
    svc = await startTestService({
      edge: {
        ...edgeConfig({}),
        writeStallMs: 1000,
        sessionUnsentMaxBytes: 1024 * 1024,
        unsentMaxBytes: 64 * 1024 * 1024,
      },
    });
    quiz = await bigQuiz(svc);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("destroys a session that never reads its answers, refusing its new streams meanwhile; a reader is served", async () => {
    const token = await svc.token("zero-window");
    const session = connectHttp2(svc.baseUrl, { settings: { initialWindowSize: 0 } });
    session.on("error", () => {});
    const get = () => {
      const stream = session.request({
        ":path": `/quizzes/${quiz.quizId}`,
        authorization: `Bearer ${token}`,
      });
      stream.on("error", () => {});
      const headers = new Promise<number>((resolve) =>
        stream.once("response", (h) => resolve(Number(h[":status"]))),
      );
      const closed = new Promise<number>((resolve) =>
        stream.once("close", () => resolve(stream.rstCode)),
      );
      return { stream, headers, closed };
    };
    const t0 = performance.now();
    const streams = Array.from({ length: 10 }, get);
    // Answers begin (their HEADERS are not flow-controlled): those whose call
    // found the session under its 1 MiB unsent; the others wait for room.
    expect(await Promise.race(streams.map((s) => s.headers))).toBe(200);
    // Over its 1 MiB and not moving for 250 ms (looked at every 250 ms), not yet
    // stalled for the whole second that destroys it: a new stream is refused before any work.
    await sleep(600);
    const refused = get();
    expect(await refused.closed).toBe(h2.NGHTTP2_REFUSED_STREAM);
    // A client that reads gets the whole answer meanwhile.
    const res = await svc.rest("reader", "GET", `/quizzes/${quiz.quizId}`);
    const body = await res.text();
    expect(res.status).toBe(200);
    expect(body.length).toBeGreaterThan(280_000);
    // No answer moves for writeStallMs (1 s): the session is destroyed, every stream with it.
    await Promise.all(streams.map((s) => s.closed));
    await new Promise((resolve) =>
      session.closed ? resolve(null) : session.once("close", resolve),
    );
    const endedAfter = performance.now() - t0;
    reportFigures("zero-window session", { endedAfterMs: Math.round(endedAfter) });
    // Bounds: after the stall limit, within it plus two sweeps and slack.
    expect(endedAfter).toBeGreaterThanOrEqual(1000);
    expect(endedAfter).toBeLessThan(4000);
  });
});

describe("small pieces", () => {
  let svc: TestService;
  let quiz: QuizFixture;
  beforeAll(async () => {
    svc = await startTestService();
    quiz = await insertQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("ends the connection of a gRPC call whose message comes in 1-byte DATA frames, with GOAWAY ENHANCE_YOUR_CALM", async () => {
    const token = await svc.token("tiny-frames");
    const conn = rawH2(Number(new URL(svc.baseUrl).port));
    const head = headerBlock([
      [":method", "POST"],
      [":scheme", "http"],
      [":path", "/practice.v1.PracticeSessionService/ListSessions"],
      [":authority", "127.0.0.1"],
      ["content-type", "application/grpc"],
      ["te", "trailers"],
      ["authorization", `Bearer ${token}`],
    ]);
    // A 1,000-byte message, one byte a frame, on three streams one after the other.
    const message = Buffer.alloc(1005);
    message.writeUInt32BE(1000, 1);
    for (const id of [1, 3, 5]) {
      conn.socket.write(h2Frame(1, 0x4, id, head));
      for (let i = 0; i < message.length && !conn.socket.destroyed; i += 50) {
        const frames = [];
        for (let j = i; j < Math.min(i + 50, message.length); j++) {
          frames.push(h2Frame(0, j === message.length - 1 ? 1 : 0, id, message.subarray(j, j + 1)));
        }
        conn.socket.write(Buffer.concat(frames));
        await sleep(5);
      }
    }
    await Promise.race([conn.closed, sleep(3000)]);
    const resets = conn.frames.filter((f) => f.type === 3).map((f) => f.payload.readUInt32BE(0));
    const goaways = conn.frames.filter((f) => f.type === 7).map((f) => f.payload.readUInt32BE(4));
    reportFigures("1-byte DATA frames", { resets, goaways });
    expect(goaways[0]).toBe(11);
    expect(conn.socket.destroyed || conn.frames.length > 0).toBe(true);
    conn.socket.destroy();
    // The port serves others as before.
    expect((await svc.rest("other", "GET", `/quizzes/${quiz.quizId}/sessions`)).status).toBe(200);
  });

  it("closes an HTTP/1.1 connection whose body comes in 1-byte chunks", async () => {
    const token = await svc.token("tiny-chunks");
    const socket = netConnect(Number(new URL(svc.baseUrl).port), "127.0.0.1");
    socket.on("error", () => {});
    let answer = "";
    socket.on("data", (d) => {
      answer += d;
    });
    const closed = new Promise((resolve) => socket.once("close", resolve));
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.write(
      `POST /quizzes/${quiz.quizId}/sessions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n` +
        "content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    const body = `{${" ".repeat(500)}}`;
    for (let i = 0; i < body.length && !socket.destroyed; i += 20) {
      socket.write([...body.slice(i, i + 20)].map((c) => `1\r\n${c}\r\n`).join(""));
      await sleep(2);
    }
    await Promise.race([closed, sleep(3000)]);
    reportFigures("1-byte chunks", { closed: socket.destroyed, answered: answer.slice(0, 12) });
    expect(socket.destroyed).toBe(true);
    expect(answer).toBe("");
  });
});

describe("resets", () => {
  let svc: TestService;
  let quiz: QuizFixture;
  beforeAll(async () => {
    svc = await startTestService();
    quiz = await insertQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("lets a shared connection cancel 30% of its calls, 600 calls in all, without GOAWAY", async () => {
    const session = await h2Connect(svc.baseUrl);
    let goaway: number | undefined;
    session.on("goaway", (code: number) => {
      goaway = code;
    });
    session.on("error", () => {});
    const token = await svc.token("bff");
    const path = "/practice.v1.PracticeSessionService/ListSessions";
    const body = Buffer.from([0, 0, 0, 0, 3, 0x0a, 0x01, 0x31]);
    let ok = 0;
    for (let round = 0; round < 60; round++) {
      const calls = Array.from({ length: 10 }, (_, i) => {
        const stream = session.request({
          ":method": "POST",
          ":path": path,
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${token}`,
        });
        stream.on("error", () => {});
        stream.end(body);
        if (i < 3) stream.close(h2.NGHTTP2_CANCEL);
        return new Promise<void>((resolve) => {
          stream.on("trailers", (t) => {
            if (t["grpc-status"] === "0") ok++;
          });
          stream.resume();
          stream.once("close", () => resolve());
        });
      });
      await Promise.all(calls);
    }
    reportFigures("30% cancelled on one connection", { calls: 600, ok, goaway });
    expect(goaway).toBeUndefined();
    expect(ok).toBe(420);
    session.destroy();
    void quiz;
  });

  it("still answers a rapid-reset flood with GOAWAY ENHANCE_YOUR_CALM within 1 s", async () => {
    const t0 = performance.now();
    const goaways = await rawResetFlood(Number(new URL(svc.baseUrl).port), 1000, 1000);
    const ms = performance.now() - t0;
    reportFigures("rapid reset flood", { goaways, ms: Math.round(ms) });
    expect(goaways[0]).toBe(h2.NGHTTP2_ENHANCE_YOUR_CALM);
  });
});

describe("client resets in the log", () => {
  let svc: TestService;
  let quiz: QuizFixture;
  const lines: { level: number; msg: string; code?: string; err?: { stack?: string } }[] = [];
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    svc = await startTestService({ logger: pino({ level: "info" }, sink) });
    quiz = await insertQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("1,000 calls reset with INTERNAL_ERROR in 3 s, over gRPC, Connect and REST on HTTP/2: at most 30 log lines, none at error level, no stack", async () => {
    const token = await svc.token("resetter");
    const grpcBody = Buffer.from([0, 0, 0, 0, 3, 0x0a, 0x01, 0x31]);
    // Calls whose request is still arriving when the client resets them: a
    // message or a body begun and not ended (END_STREAM never sent).
    const kinds: { headers: Record<string, string>; body: Buffer }[] = [
      {
        headers: {
          ":method": "POST",
          ":path": "/practice.v1.PracticeSessionService/ListSessions",
          "content-type": "application/grpc",
          te: "trailers",
        },
        body: grpcBody.subarray(0, 4),
      },
      {
        headers: {
          ":method": "POST",
          ":path": "/practice.v1.PracticeSessionService/ListSessions",
          "content-type": "application/json",
        },
        body: Buffer.from(`{"quizId":`),
      },
      {
        headers: {
          ":method": "POST",
          ":path": `/quizzes/${quiz.quizId}/sessions`,
          "content-type": "application/json",
        },
        body: Buffer.from("{"),
      },
    ];
    const before = lines.length;
    const t0 = performance.now();
    let sent = 0;
    // 10 connections of 100 calls each, at once (a connection's resets stay under the reset guard's share).
    const sessions = await Promise.all(Array.from({ length: 10 }, () => h2Connect(svc.baseUrl)));
    const connections = sessions.map(async (session, c) => {
      session.on("error", () => {});
      const calls = Array.from({ length: 100 }, (_, i) => {
        const kind = kinds[(c * 100 + i) % kinds.length] as (typeof kinds)[number];
        const stream = session.request({ ...kind.headers, authorization: `Bearer ${token}` });
        stream.on("error", () => {});
        stream.write(kind.body);
        sent++;
        return new Promise<void>((resolve) => {
          // Reset while the server reads the call (as stream.destroy(err) or connect-node's deadline does).
          setTimeout(() => stream.close(h2.NGHTTP2_INTERNAL_ERROR), 1 + (i % 5));
          stream.resume();
          stream.once("close", () => resolve());
        });
      });
      await Promise.all(calls);
      session.destroy();
    });
    await Promise.all(connections);
    const ms = performance.now() - t0;
    await sleep(500);
    const logged = lines.slice(before);
    reportFigures("1,000 client resets", {
      sent,
      ms: Math.round(ms),
      lines: logged.length,
      byLevelMsgCode: tally(logged, (l) => `${l.level} ${l.msg} ${l.code ?? ""}`),
      messages: [...new Set(logged.map((l) => l.msg))],
    });
    expect(sent).toBe(1000);
    expect(logged.length).toBeLessThanOrEqual(30);
    expect(logged.filter((l) => l.level >= 50)).toEqual([]);
    expect(logged.filter((l) => l.err?.stack !== undefined)).toEqual([]);
  });
});

// Holding a row lock past a deadline needs MySQL; SQLite statements are short.
describe.skipIf(testStore() === "sqlite")("deadlines in the log", () => {
  let svc: TestService;
  let quiz: QuizFixture;
  const lines: { level: number; msg: string; err?: { stack?: string } }[] = [];
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split("\n")) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    svc = await startTestService({ requestTimeoutMs: 300, logger: pino({ level: "info" }, sink) });
    quiz = await insertQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("REST answers over HTTP/2 past their deadline on a locked row: 504s, no line at error level, no stack", async () => {
    const started = await svc.rest("hasty", "POST", `/quizzes/${quiz.quizId}/sessions`);
    const { id } = (await started.json()) as { id: string };
    const locker = await createConnection({ uri: svc.database.url });
    await locker.query("BEGIN");
    await locker.query("SELECT id FROM practice_sessions WHERE id = ? FOR UPDATE", [id]);
    const session = await h2Connect(svc.baseUrl);
    const token = await svc.token("hasty");
    const before = lines.length;
    try {
      const statuses = await Promise.all(
        Array.from({ length: 20 }, () => {
          const stream = session.request({
            ":method": "POST",
            ":path": `/sessions/${id}/answers`,
            authorization: `Bearer ${token}`,
            "content-type": "application/json",
          });
          stream.on("error", () => {});
          stream.end(JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "x" }));
          stream.resume();
          return new Promise<number>((resolve) => {
            let status = 0;
            stream.once("response", (h) => {
              status = Number(h[":status"]);
            });
            stream.once("close", () => resolve(status));
          });
        }),
      );
      await sleep(1000);
      const logged = lines.slice(before);
      reportFigures("20 REST answers over HTTP/2 past their deadline", {
        statuses: tally(statuses, String),
        byLevelMsg: tally(logged, (l) => `${l.level} ${l.msg}`),
      });
      expect(statuses.every((s) => s === 504)).toBe(true);
      expect(logged.filter((l) => l.level >= 50)).toEqual([]);
      expect(logged.filter((l) => l.err?.stack !== undefined)).toEqual([]);
    } finally {
      session.destroy();
      await locker.query("ROLLBACK");
      await locker.end();
    }
  });

  it("REST calls over HTTP/2 whose body comes after their deadline: one 504 each, no line at error level, no stack", async () => {
    const session = await h2Connect(svc.baseUrl);
    const token = await svc.token("slow-body");
    const before = lines.length;
    const statuses = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const stream = session.request({
          ":method": "POST",
          ":path": `/quizzes/${quiz.quizId}/sessions`,
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
        });
        stream.on("error", () => {});
        stream.resume();
        const status = new Promise<number>((resolve) => {
          let got = 0;
          stream.once("response", (h) => {
            got = Number(h[":status"]);
          });
          stream.once("close", () => resolve(got));
        });
        stream.write("{");
        // The rest of the body after the 300 ms deadline.
        await sleep(600);
        if (!stream.destroyed) stream.end("}");
        return status;
      }),
    );
    await sleep(500);
    session.destroy();
    const logged = lines.slice(before);
    reportFigures("20 REST bodies after their deadline over HTTP/2", {
      statuses: tally(statuses, String),
      byLevelMsg: tally(logged, (l) => `${l.level} ${l.msg}`),
    });
    expect(statuses.every((s) => s === 504)).toBe(true);
    expect(logged.filter((l) => l.level >= 50)).toEqual([]);
    expect(logged.filter((l) => l.err?.stack !== undefined)).toEqual([]);
  });
});
