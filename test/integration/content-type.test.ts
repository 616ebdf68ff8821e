import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionJson } from "../../src/rest/schemas.js";
import { countRows, insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { endStatus, grpcFrame, grpcRequest, h2Connect } from "../support/h2-raw.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
let sessionId: string;
const USER = "typist";

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db);
  const res = await svc.rest(USER, "POST", `/quizzes/${quiz.quizId}/sessions`);
  sessionId = ((await res.json()) as SessionJson).id;
});
afterAll(async () => {
  await svc?.close();
});

const answerBody = () => JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "A1" });

describe("a REST body that is not JSON", () => {
  it("over HTTP/2: 400 problem+json, with no Connection header for Node to drop with a warning (HTTP/1.1 keeps it)", async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    const session = await h2Connect(svc.baseUrl);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": `/sessions/${sessionId}/answers`,
        "content-type": "application/json",
        ...(await svc.auth(USER)),
      });
      const headers = new Promise<Record<string, unknown>>((resolve) =>
        stream.on("response", (h) => resolve(h)),
      );
      stream.end("{");
      stream.resume();
      const h = await headers;
      expect(h[":status"]).toBe(400);
      expect(h["content-type"]).toMatch(/^application\/problem\+json/);
      expect(h.connection).toBeUndefined();
      // Node emits a process warning on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.filter((w) => /connection header/.test(w))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      session.close();
    }
    const http1 = await svc.rest(USER, "POST", `/sessions/${sessionId}/answers`, {
      headers: { "content-type": "application/json" },
      body: "{",
    });
    expect(http1.status).toBe(400);
    expect(http1.headers.get("connection")).toBe("close");
  });
});

describe("a REST body that is not declared as JSON", () => {
  it.each([
    ["text/plain", "text/plain"],
    ["a form", "application/x-www-form-urlencoded"],
    ["no content type", null],
  ])("%s: 415 problem that names application/json, and nothing written", async (_name, type) => {
    const before = await countRows(svc.db, "practice_session_answers");
    for (const prefix of ["", "/api"]) {
      const headers: Record<string, string> = type === null ? {} : { "content-type": type };
      // A Blob without a type makes fetch send no content-type at all.
      const body = type === null ? new Blob([answerBody()]) : answerBody();
      const res = await svc.rest(USER, "POST", `${prefix}/sessions/${sessionId}/answers`, {
        headers,
        body,
      });
      expect(res.status).toBe(415);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toEqual({
        type: "about:blank",
        title: "Unsupported Media Type",
        status: 415,
        code: "unimplemented",
        detail: "a request body must be JSON, sent with content-type: application/json",
      });
    }
    expect(await countRows(svc.db, "practice_session_answers")).toBe(before);
  });

  it("start and complete with a text/plain body are 415 too; no body at all is still fine", async () => {
    const text = { headers: { "content-type": "text/plain" }, body: "{}" };
    const other = await insertQuiz(svc.db);
    const before = await countRows(svc.db, "practice_sessions");
    expect((await svc.rest(USER, "POST", `/quizzes/${other.quizId}/sessions`, text)).status).toBe(
      415,
    );
    expect(await countRows(svc.db, "practice_sessions")).toBe(before);
    expect((await svc.rest(USER, "POST", `/sessions/${sessionId}/complete`, text)).status).toBe(
      415,
    );
    expect((await svc.rest(USER, "POST", `/quizzes/${other.quizId}/sessions`)).status).toBe(201);
  });

  it("JSON with a charset parameter is JSON", async () => {
    const res = await svc.rest(USER, "POST", `/sessions/${sessionId}/answers`, {
      headers: { "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({ question_id: quiz.questionIds[1], user_answer: "A2" }),
    });
    expect(res.status).toBe(201);
  });
});

describe("an RPC message that does not parse", () => {
  const path = "/practice.v1.PracticeSessionService/SubmitAnswer";
  // A field 1 (length-delimited) that claims more bytes than follow.
  const garbage = new Uint8Array([0x0a, 0x7f, 0x31]);

  it("is invalid_argument over Connect (400) and gRPC, not Connect's internal 500, and nothing is written", async () => {
    const before = await countRows(svc.db, "practice_session_answers");
    const headers = { ...(await svc.auth(USER)), "content-type": "application/proto" };
    // With an Origin, as from a browser, Connect's Fastify plugin serves the call.
    for (const origin of [{}, { origin: "http://elsewhere.example" }] as Record<string, string>[]) {
      const res = await fetch(`${svc.baseUrl}${path}`, {
        method: "POST",
        headers: { ...headers, ...origin },
        body: garbage,
      });
      expect([res.status, await res.json()]).toEqual([
        400,
        { code: "invalid_argument", message: "parse binary: premature EOF" },
      ]);
    }
    const session = await h2Connect(svc.baseUrl);
    try {
      for (const origin of [{}, { origin: "http://elsewhere.example" }] as Record<
        string,
        string
      >[]) {
        const http2 = session.request({ ":method": "POST", ":path": path, ...headers, ...origin });
        const status = new Promise((resolve) => http2.on("response", (h) => resolve(h[":status"])));
        http2.end(garbage);
        http2.resume();
        expect(await status).toBe(400);
      }
      const authorization = (await svc.auth(USER)).authorization ?? "";
      const grpc = await endStatus(
        grpcRequest(session, path, grpcFrame(garbage), { authorization }),
      );
      expect(grpc).toBe(3); // INVALID_ARGUMENT
      // gRPC-Web: the status is in the body's last envelope.
      const web = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc-web+proto",
        authorization,
      });
      const chunks: Buffer[] = [];
      web.on("data", (c: Buffer) => chunks.push(c));
      const ended = new Promise((resolve) => web.on("end", resolve));
      web.end(grpcFrame(garbage));
      await ended;
      expect(Buffer.concat(chunks).toString("latin1")).toMatch(/grpc-status: 3\r\n/);
    } finally {
      session.destroy();
    }
    expect(await countRows(svc.db, "practice_session_answers")).toBe(before);
  });

  it("compressed (gzip) is invalid_argument too, over Connect and gRPC", async () => {
    const headers = { ...(await svc.auth(USER)), "content-type": "application/proto" };
    const res = await fetch(`${svc.baseUrl}${path}`, {
      method: "POST",
      headers: { ...headers, "content-encoding": "gzip" },
      body: gzipSync(garbage),
    });
    expect([res.status, await res.json()]).toEqual([
      400,
      { code: "invalid_argument", message: "parse binary: premature EOF" },
    ]);
    const session = await h2Connect(svc.baseUrl);
    try {
      const zipped = grpcFrame(gzipSync(garbage));
      zipped[0] = 1; // the compressed flag
      const grpc = await endStatus(
        grpcRequest(session, path, zipped, { ...(await svc.auth(USER)), "grpc-encoding": "gzip" }),
      );
      expect(grpc).toBe(3); // INVALID_ARGUMENT
    } finally {
      session.destroy();
    }
  });
});
