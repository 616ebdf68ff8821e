import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { createConnectTransport } from "@connectrpc/connect-node";
import type { Metadata } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AnswerConflictSchema,
  PracticeSessionService,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { countRows, insertQuiz } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

// The replay rules over the wire, on every transport: the same answer again
// and a repeated completion are OK and write nothing; a different answer is
// already_exists with the stored answer beside the code.

let svc: TestService;
let connectBinary: Client<typeof PracticeSessionService>;
beforeAll(async () => {
  svc = await startTestService();
  connectBinary = createClient(
    PracticeSessionService,
    createConnectTransport({ baseUrl: svc.baseUrl, httpVersion: "1.1", useBinaryFormat: true }),
  );
});
afterAll(async () => {
  await svc?.close();
});

let users = 0;
async function started() {
  const user = `retry-${++users}`;
  const quiz = await insertQuiz(svc.db, { questions: 2 });
  const res = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
  const { id } = (await res.json()) as { id: string };
  const q1 = quiz.questionIds[0] ?? "";
  return { user, id, q1, answer: { sessionId: id, questionId: q1, userAnswer: "A1" } };
}

const writes = async () => [
  await countRows(svc.db, "practice_session_answers"),
  await countRows(svc.db, "practice_outbox"),
];

/** A grpc-js error's trailers as Connect reads them: the code, message and details. */
function fromGrpcJs(err: unknown): ConnectError {
  const metadata = (err as { metadata?: Metadata }).metadata;
  const trailer = new Headers();
  for (const [key, value] of Object.entries(metadata?.getMap() ?? {})) {
    trailer.set(key, Buffer.isBuffer(value) ? value.toString("base64") : String(value));
  }
  trailer.set("grpc-status", String((err as { code: number }).code));
  return findTrailerError(trailer) ?? ConnectError.from(err);
}

type Rpc = "connect-json" | "connect-binary" | "grpc-web" | "grpc";
const RPCS: Rpc[] = ["connect-json", "connect-binary", "grpc-web", "grpc"];

async function submitVia(
  rpc: Rpc,
  user: string,
  answer: Parameters<Client<typeof PracticeSessionService>["submitAnswer"]>[0],
) {
  const headers = await svc.auth(user);
  if (rpc === "grpc")
    return svc.grpc.submitAnswer(answer, headers).catch((e) => Promise.reject(fromGrpcJs(e)));
  const client =
    rpc === "connect-json" ? svc.connect : rpc === "connect-binary" ? connectBinary : svc.grpcWeb;
  return client.submitAnswer(answer, { headers });
}

async function completeVia(rpc: Rpc, user: string, sessionId: string) {
  const headers = await svc.auth(user);
  if (rpc === "grpc") return svc.grpc.completeSession({ sessionId }, headers);
  const client =
    rpc === "connect-json" ? svc.connect : rpc === "connect-binary" ? connectBinary : svc.grpcWeb;
  return client.completeSession({ sessionId }, { headers });
}

describe("REST over a socket", () => {
  it("the same answer again is 200 with the stored answer; a different one is 409 with stored_answer", async () => {
    const { user, id, q1 } = await started();
    const post = (text: string) =>
      svc.rest(user, "POST", `/sessions/${id}/answers`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ question_id: q1, user_answer: text }),
      });
    const first = await post("A1");
    expect(first.status).toBe(201);
    const stored = (await first.json()) as { answer: unknown; session: unknown };
    const before = await writes();
    const again = await post("A1");
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(stored);
    const conflict = await post("A1 ");
    expect(conflict.status).toBe(409);
    expect(conflict.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await conflict.json()).toMatchObject({
      status: 409,
      code: "already_exists",
      stored_answer: stored.answer,
    });
    expect(await writes()).toEqual(before);
  });

  it("a second completion is 200 with the same completed session", async () => {
    const { user, id } = await started();
    const complete = () => svc.rest(user, "POST", `/sessions/${id}/complete`);
    const first = await complete();
    const body = await first.json();
    const before = await writes();
    svc.clock.advance(3000);
    const again = await complete();
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(body);
    expect(await writes()).toEqual(before);
  });
});

describe.each(RPCS)("%s", (rpc) => {
  it("the same answer again is OK with the stored answer; a different one is ALREADY_EXISTS with an AnswerConflict detail", async () => {
    const { user, answer } = await started();
    const first = await submitVia(rpc, user, answer);
    const before = await writes();
    const again = await submitVia(rpc, user, answer);
    expect(again.answer).toEqual(first.answer);
    expect(again.session).toEqual(first.session);
    const err = await submitVia(rpc, user, { ...answer, userAnswer: "B1" }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.AlreadyExists);
    const [detail] = err?.findDetails(AnswerConflictSchema) ?? [];
    expect(detail?.storedAnswer).toEqual(first.answer);
    expect(await writes()).toEqual(before);
  });

  it("a second completion is OK with the same completed_at and score; a retried answer after it is OK", async () => {
    const { user, id, answer } = await started();
    await submitVia(rpc, user, answer);
    const first = await completeVia(rpc, user, id);
    const before = await writes();
    svc.clock.advance(3000);
    const again = await completeVia(rpc, user, id);
    expect(again.session?.completedAt).toEqual(first.session?.completedAt);
    expect(again.session?.scorePercentage).toBe(50);
    expect((await submitVia(rpc, user, answer)).session?.completedAt).toEqual(
      first.session?.completedAt,
    );
    expect(await writes()).toEqual(before);
  });
});

describe("Connect JSON error body", () => {
  it("carries the AnswerConflict detail under details, as Connect's protocol says", async () => {
    const { user, answer } = await started();
    const auth = await svc.auth(user);
    const call = (userAnswer: string) =>
      fetch(`${svc.baseUrl}/practice.v1.PracticeSessionService/SubmitAnswer`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ ...answer, userAnswer }),
      });
    expect((await call("A1")).status).toBe(200);
    expect((await call("A1")).status).toBe(200);
    const res = await call("B1");
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({
      code: "already_exists",
      details: [{ type: "practice.v1.AnswerConflict", value: expect.any(String) }],
    });
  });
});
