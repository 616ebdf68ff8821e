import { spawnSync } from "node:child_process";
import { constants as h2 } from "node:http2";
import { connect } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SubmitAnswerRequestSchema } from "../../gen/practice/v1/practice_session_service_pb.js";
import { Admission } from "../../src/ops/admission.js";
import { testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { grpcFrame, grpcRequest, h2Connect } from "../support/h2-raw.js";
import { sleep } from "../support/load.js";
import { RACE_ADMISSION, startTestService, type TestService } from "../support/service.js";

// A caller who has left before its request is read costs the service the
// reading of its bytes, and nothing else: no admission slot, no use case, no
// statement; its call is counted (code "canceled") all the same.

const admission = new Admission(RACE_ADMISSION);
let svc: TestService;
let quiz: QuizFixture;
let port: number;

beforeAll(async () => {
  // On MySQL through a proxy: what the service asks of the database is seen on the wire.
  svc = await startTestService({ proxy: testStore() === "mysql", admission });
  quiz = await insertQuiz(svc.db);
  port = Number(new URL(svc.baseUrl).port);
});
afterAll(async () => {
  await svc?.close();
});

/** Transactions the service has begun on MySQL since the test began watching (0 on SQLite). */
function begins(): number {
  // A COM_QUERY packet (0x03) of Kysely's `begin`.
  return svc.proxy?.count("\x03begin") ?? 0;
}

/** Calls of `procedure` counted with `code` in /metrics (REST unless `transport` says). */
async function counted(procedure: string, code: string, transport = "rest"): Promise<number> {
  const text = await (await fetch(`${svc.metricsUrl}/metrics`)).text();
  const line = text
    .split("\n")
    .find(
      (l) =>
        l.startsWith("practice_requests_total{") &&
        l.includes(`transport="${transport}"`) &&
        l.includes(`procedure="${procedure}"`) &&
        l.includes(`code="${code}"`),
    );
  return line === undefined ? 0 : Number(line.split(" ").pop());
}

/** `counted(…)` once it has reached `expected` (or 5 s have passed), then a moment more for any extra. */
async function countedOnceSettled(
  procedure: string,
  code: string,
  expected: number,
  transport = "rest",
) {
  for (let i = 0; i < 100 && (await counted(procedure, code, transport)) < expected; i++) {
    await sleep(50);
  }
  await sleep(100);
  return counted(procedure, code, transport);
}

const ANSWER_ROUTE = "POST /sessions/:id/answers";

/** An answer's whole request over HTTP/1.1, as a client writes it. */
async function answerRequest(sessionId: string, user: string): Promise<string> {
  const token = await svc.token(user);
  const body = JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "gone" });
  return (
    `POST /sessions/${sessionId}/answers HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n` +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** Writes `request` and the client's FIN at once; resolves with what came back before the close. */
function sendAndHalfClose(request: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let received = "";
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
    });
    socket.on("error", () => {});
    socket.on("close", () => resolve(received));
    socket.end(request);
  });
}

async function startSession(user: string): Promise<string> {
  const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
  return ((await res.json()) as { id: string }).id;
}

async function answersOf(user: string, sessionId: string): Promise<unknown[]> {
  const res = await svc.rest(user, "GET", `/sessions/${sessionId}`);
  return ((await res.json()) as { answers: unknown[] }).answers;
}

describe("a caller who has left before its request is read", () => {
  it("20 whole answers, each followed by the client's FIN: no slot, no transaction, nothing stored or sent, 20 counted as canceled", async () => {
    const user = "half-closer";
    const sessionId = await startSession(user);
    const request = await answerRequest(sessionId, user);
    const admitted = admission.admitted;
    const begun = begins();
    const canceled = await counted(ANSWER_ROUTE, "canceled");

    const received = await Promise.all(Array.from({ length: 20 }, () => sendAndHalfClose(request)));
    expect(await countedOnceSettled(ANSWER_ROUTE, "canceled", canceled + 20)).toBe(canceled + 20);
    expect(received).toEqual(Array(20).fill(""));
    expect(admission.admitted - admitted).toBe(0);
    expect(begins() - begun).toBe(0);
    expect(await answersOf(user, sessionId)).toEqual([]);
  });

  it("200 connections that sent an answer and left while the service was busy are read, counted and dropped; the next caller is served", async () => {
    const user = "backlogged";
    const sessionId = await startSession(user);
    const request = await answerRequest(sessionId, user);
    const admitted = admission.admitted;
    const begun = begins();
    const canceled = await counted(ANSWER_ROUTE, "canceled");

    // While this process is held, the kernel queues the connections in the
    // port's backlog, each with its request and its FIN: gone before accepted.
    const client = spawnSync(
      process.execPath,
      [
        "-e",
        `const net = require("node:net");
         let open = 0;
         for (let i = 0; i < 200; i++) {
           open++;
           const s = net.connect(${port}, "127.0.0.1", () => s.end(process.argv[1]));
           s.on("error", () => {});
           s.on("finish", () => { s.destroy(); if (--open === 0) process.exit(0); });
         }`,
        request,
      ],
      { timeout: 20_000 },
    );
    expect(client.status).toBe(0);

    const learner = await svc.rest("learner", "GET", `/quizzes/${quiz.quizId}/sessions`);
    expect(learner.status).toBe(200);
    // Counted as each connection is dropped: on a busy box the last may come after the learner.
    expect(await countedOnceSettled(ANSWER_ROUTE, "canceled", canceled + 200)).toBe(canceled + 200);
    // The learner's list took one slot; no answer took any.
    expect(admission.admitted - admitted).toBe(1);
    expect(begins() - begun).toBe(0);
    expect(await answersOf(user, sessionId)).toEqual([]);
  });

  it("20 whole gRPC answers, each reset by its client as it is sent: no slot, nothing stored, 20 counted as canceled", async () => {
    const user = "resetter";
    const sessionId = await startSession(user);
    const path = "/practice.v1.PracticeSessionService/SubmitAnswer";
    const message = toBinary(
      SubmitAnswerRequestSchema,
      create(SubmitAnswerRequestSchema, {
        sessionId,
        questionId: quiz.questionIds[0],
        userAnswer: "gone",
      }),
    );
    const auth = { authorization: `Bearer ${await svc.token(user)}` };
    const admitted = admission.admitted;
    const begun = begins();
    const canceled = await counted(path, "canceled", "grpc");

    const session = await h2Connect(svc.baseUrl);
    const streams = Array.from({ length: 20 }, () => {
      const stream = grpcRequest(session, path, grpcFrame(message), auth);
      stream.close(h2.NGHTTP2_CANCEL);
      return new Promise((resolve) => stream.once("close", resolve));
    });
    await Promise.all(streams);
    session.close();

    expect(await countedOnceSettled(path, "canceled", canceled + 20, "grpc")).toBe(canceled + 20);
    expect(admission.admitted - admitted).toBe(0);
    expect(begins() - begun).toBe(0);
    expect(await answersOf(user, sessionId)).toEqual([]);
  });
});
