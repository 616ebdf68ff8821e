import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertQuiz } from "../support/fixtures.js";
import { grpcFrame } from "../support/h2-raw.js";
import { rawExchange } from "../support/raw-http.js";
import { rawCall } from "../support/rpc-exchange.js";
import { startTestService, type TestService } from "../support/service.js";

// Text that is not well-formed Unicode (a lone surrogate in a JSON string,
// bytes that are not UTF-8) is refused alike on every transport, and never
// stored changed (U+FFFD in its place).

let svc: TestService;
let grpcClient: grpc.Client;
beforeAll(async () => {
  svc = await startTestService();
  grpcClient = new grpc.Client(new URL(svc.baseUrl).host, grpc.credentials.createInsecure());
});
afterAll(async () => {
  grpcClient?.close();
  await svc?.close();
});

const SUBMIT = "/practice.v1.PracticeSessionService/SubmitAnswer";
const NOT_UTF8 = Buffer.from([0x61, 0xff, 0x62]); // "a", a byte no UTF-8 text has, "b"
const LONE_SURROGATE_UTF8 = Buffer.from([0xed, 0xa0, 0x80]); // U+D800 as if it were a character

let users = 0;
async function session() {
  const user = `unicode-${++users}`;
  const quiz = await insertQuiz(svc.db, { questions: 2 });
  const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
  const { id } = (await res.json()) as { id: string };
  return { user, id, quiz, questionId: quiz.questionIds[0] ?? "" };
}

async function answersOf(sessionId: string) {
  const rows = await svc.db
    .selectFrom("practice_session_answers")
    .select("user_answer")
    .where("session_id", "=", sessionId)
    .execute();
  return rows.map((r) => r.user_answer);
}

/** A protobuf string field: tag, length, bytes. */
const field = (tag: number, bytes: Buffer) =>
  Buffer.concat([Buffer.from([tag, bytes.length]), bytes]);
const submitMessage = (sessionId: string, questionId: string, answer: Buffer) =>
  Buffer.concat([
    field(0x0a, Buffer.from(sessionId)),
    field(0x12, Buffer.from(questionId)),
    field(0x1a, answer),
  ]);

describe("REST", () => {
  it("refuses a lone surrogate in user_answer with 400 invalid_argument and stores nothing", async () => {
    const { user, id, questionId } = await session();
    const res = await svc.rest(user, "POST", `/sessions/${id}/answers`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"question_id":"${questionId}","user_answer":"x\\ud800"}`,
    });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({
      code: "invalid_argument",
      detail: "user_answer is not well-formed Unicode",
    });
    expect(await answersOf(id)).toEqual([]);
  });

  it("refuses a body that is not UTF-8 with 400 invalid_argument and stores nothing", async () => {
    const { user, id, questionId } = await session();
    for (const bad of [NOT_UTF8, LONE_SURROGATE_UTF8]) {
      const res = await svc.rest(user, "POST", `/sessions/${id}/answers`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: Buffer.concat([
          Buffer.from(`{"question_id":"${questionId}","user_answer":"`),
          bad,
          Buffer.from('"}'),
        ]),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({
        code: "invalid_argument",
        detail: "request body is not UTF-8 text",
      });
    }
    expect(await answersOf(id)).toEqual([]);
  });

  it("refuses ids and a cursor that are not well-formed, in the path or the query, with 400 invalid_argument", async () => {
    const { user, quiz, id } = await session();
    for (const path of [
      "/quizzes/%ED%A0%80/sessions",
      "/quizzes/%FF",
      `/quizzes/${quiz.quizId}/sessions?cursor=%ED%A0%80`,
      `/quizzes/${quiz.quizId}/sessions?cursor=%FF`,
      `/sessions/${id.slice(0, -1)}%FF`,
    ]) {
      const res = await svc.rest(user, "GET", path);
      expect(res.status, path).toBe(400);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({ code: "invalid_argument" });
    }
  });

  it("refuses bytes that are not UTF-8 in the request line with a 400 problem+json", async () => {
    const { user, quiz } = await session();
    const token = await svc.token(user);
    const head = Buffer.concat([
      Buffer.from(`GET /quizzes/${quiz.quizId}/sessions?cursor=`),
      NOT_UTF8,
      Buffer.from(
        ` HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\nconnection: close\r\n\r\n`,
      ),
    ]);
    const { response } = await rawExchange(Number(new URL(svc.baseUrl).port), head);
    expect(response).toMatch(/^HTTP\/1\.1 400 /);
    expect(response).toMatch(/content-type: application\/problem\+json/i);
    expect(response).toMatch(/"code":"invalid_argument"/);
  });
});

describe("Connect", () => {
  const post = async (user: string, type: string, body: string | Buffer, origin?: string) =>
    fetch(`${svc.baseUrl}${SUBMIT}`, {
      method: "POST",
      headers: { ...(await svc.auth(user)), "content-type": type, ...(origin && { origin }) },
      body,
    });

  it("JSON: refuses a lone surrogate and bytes that are not UTF-8 with 400 invalid_argument", async () => {
    const { user, id, questionId } = await session();
    const json = (answer: Buffer) =>
      Buffer.concat([
        Buffer.from(`{"sessionId":"${id}","questionId":"${questionId}","userAnswer":"`),
        answer,
        Buffer.from('"}'),
      ]);
    // With and without a charset parameter, and with an Origin (a browser).
    for (const [type, origin] of [
      ["application/json", undefined],
      ["application/json; charset=utf-8", undefined],
      ["application/json; charset=utf-8", "http://localhost:5173"],
    ] as const) {
      for (const body of [
        json(Buffer.from("x\\ud800")),
        json(NOT_UTF8),
        json(LONE_SURROGATE_UTF8),
      ]) {
        const res = await post(user, type, body, origin);
        expect(res.status).toBe(400);
        expect(await res.json()).toMatchObject({ code: "invalid_argument" });
      }
    }
    expect(await answersOf(id)).toEqual([]);
  });

  it("binary: refuses a string field that is not UTF-8 with 400 invalid_argument", async () => {
    const { user, id, questionId } = await session();
    for (const bad of [NOT_UTF8, LONE_SURROGATE_UTF8]) {
      const res = await post(user, "application/proto", submitMessage(id, questionId, bad));
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: "invalid_argument" });
    }
    expect(await answersOf(id)).toEqual([]);
  });
});

describe("gRPC and gRPC-Web", () => {
  it("gRPC: refuses a string field that is not UTF-8 with INVALID_ARGUMENT", async () => {
    const { user, id, questionId } = await session();
    for (const bad of [NOT_UTF8, LONE_SURROGATE_UTF8]) {
      const { err } = await rawCall(
        grpcClient,
        SUBMIT,
        submitMessage(id, questionId, bad),
        await svc.auth(user),
      );
      expect(err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    }
    expect(await answersOf(id)).toEqual([]);
  });

  it("gRPC-Web: refuses a string field that is not UTF-8 with grpc-status 3", async () => {
    const { user, id, questionId } = await session();
    const res = await fetch(`${svc.baseUrl}${SUBMIT}`, {
      method: "POST",
      headers: { ...(await svc.auth(user)), "content-type": "application/grpc-web+proto" },
      body: grpcFrame(submitMessage(id, questionId, NOT_UTF8)),
    });
    const body = Buffer.from(await res.arrayBuffer()).toString("latin1");
    expect(res.headers.get("grpc-status") ?? body).toMatch(/(^|grpc-status:\s*)3\b/);
    expect(await answersOf(id)).toEqual([]);
  });
});
