import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CodeMeaning, meaningOfName } from "../../src/app/codes.js";
import { admissionConfig } from "../../src/config.js";
import { Admission, type Slot } from "../../src/ops/admission.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * Every error a caller can get, through every transport: the same code, the
 * HTTP status and gRPC number the table of codes gives it (src/app/codes.ts),
 * and `Retry-After` exactly where the table says.
 */

/** Admission as the service's, or refusing or holding every call as a case needs. */
class ScriptedAdmission extends Admission {
  script: { at: "door" | "run"; code: Code } | "hold" | undefined;

  override refusalBeforeRead(key = ""): ConnectError | undefined {
    const script = this.script;
    if (script !== undefined && script !== "hold" && script.at === "door")
      return new ConnectError("refused at the door", script.code);
    return super.refusalBeforeRead(key);
  }

  override run<T>(slot: Slot, work: () => Promise<T>): Promise<T> {
    const script = this.script;
    if (script === "hold") {
      // Held until the call's deadline, as a call behind a long lock is.
      return new Promise((_, reject) =>
        slot.signal?.addEventListener("abort", () => reject(slot.signal?.reason), { once: true }),
      );
    }
    if (script?.at === "run") return Promise.reject(new ConnectError("refused", script.code));
    return super.run(slot, work);
  }
}

const admission = new ScriptedAdmission(admissionConfig({}, 10));
let svc: TestService;
let quiz: QuizFixture;
let empty: QuizFixture;

beforeAll(async () => {
  svc = await startTestService({ admission, requestTimeoutMs: 500 });
  quiz = await insertQuiz(svc.db);
  empty = await insertQuiz(svc.db, { questions: 0 });
});
afterAll(async () => {
  await svc?.close();
});

/** One call: its REST form and its RPC form (PracticeSessionService). */
interface Case {
  name: string;
  code: string;
  /** Who calls (null: no token). */
  user: string | null;
  script?: ScriptedAdmission["script"];
  /** Made before the call (a session to answer twice, say); gives the call's inputs. */
  arrange?: (user: string) => Promise<Record<string, string>>;
  rest: (input: Record<string, string>) => { method: string; path: string; body?: unknown };
  rpc: (input: Record<string, string>) => { method: string; message: Record<string, unknown> };
}

const startOn = (quizId: () => string) => ({
  rest: () => ({ method: "POST", path: `/quizzes/${quizId()}/sessions` }),
  rpc: () => ({ method: "StartSession", message: { quiz_id: quizId() } }),
});

const CASES: Case[] = [
  {
    name: "a quiz that does not exist",
    code: "not_found",
    user: "u-nf",
    ...startOn(() => "999999"),
  },
  {
    name: "a page size out of range",
    code: "invalid_argument",
    user: "u-ia",
    rest: () => ({ method: "GET", path: `/quizzes/${quiz.quizId}/sessions?limit=1000` }),
    rpc: () => ({ method: "ListSessions", message: { quiz_id: quiz.quizId, limit: 1000 } }),
  },
  { name: "no token", code: "unauthenticated", user: null, ...startOn(() => quiz.quizId) },
  {
    name: "a start on a quiz without questions",
    code: "failed_precondition",
    user: "u-fp",
    ...startOn(() => empty.quizId),
  },
  {
    name: "a different answer to an answered question",
    code: "already_exists",
    user: "u-ae",
    arrange: async (user) => {
      const started = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
      const { id } = (await started.json()) as { id: string };
      const first = await svc.rest(user, "POST", `/sessions/${id}/answers`, {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "first" }),
      });
      expect(first.status).toBe(201);
      return { id };
    },
    rest: ({ id }) => ({
      method: "POST",
      path: `/sessions/${id}/answers`,
      body: { question_id: quiz.questionIds[0], user_answer: "second" },
    }),
    rpc: ({ id }) => ({
      method: "SubmitAnswer",
      message: { session_id: id, question_id: quiz.questionIds[0], user_answer: "second" },
    }),
  },
  ...(["door", "run"] as const).flatMap((at): Case[] => [
    {
      name: `overload, refused ${at === "door" ? "at the door" : "for its slot"}`,
      code: "unavailable",
      user: `u-un-${at}`,
      script: { at, code: Code.Unavailable },
      ...startOn(() => quiz.quizId),
    },
    {
      name: `a caller over its share, refused ${at === "door" ? "at the door" : "for its slot"}`,
      code: "resource_exhausted",
      user: `u-re-${at}`,
      script: { at, code: Code.ResourceExhausted },
      ...startOn(() => quiz.quizId),
    },
  ]),
  {
    name: "a call past its deadline",
    code: "deadline_exceeded",
    user: "u-de",
    script: "hold",
    ...startOn(() => quiz.quizId),
  },
];

/** What a caller saw of an error. */
interface Seen {
  code: string;
  /** HTTP status (REST, Connect), or gRPC status number (gRPC, gRPC-Web). */
  status: number;
  retryAfter: string | null;
}

async function headers(user: string | null): Promise<Record<string, string>> {
  return user === null ? {} : svc.auth(user);
}

async function viaRest(c: Case, input: Record<string, string>): Promise<Seen> {
  const { method, path, body } = c.rest(input);
  const res = await svc.rest(c.user, method, path, {
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const problem = (await res.json()) as { code: string; status: number };
  expect(problem.status).toBe(res.status);
  expect(res.headers.get("content-type")).toBe("application/problem+json; charset=utf-8");
  return { code: problem.code, status: res.status, retryAfter: res.headers.get("retry-after") };
}

async function viaConnect(c: Case, input: Record<string, string>): Promise<Seen> {
  const { method, message } = c.rpc(input);
  const res = await fetch(`${svc.baseUrl}/practice.v1.PracticeSessionService/${method}`, {
    method: "POST",
    headers: {
      ...(await headers(c.user)),
      "content-type": "application/json",
      "connect-protocol-version": "1",
    },
    body: JSON.stringify(message),
  });
  const error = (await res.json()) as { code: string };
  return { code: error.code, status: res.status, retryAfter: res.headers.get("retry-after") };
}

async function viaGrpc(c: Case, input: Record<string, string>): Promise<Seen> {
  const { method, message } = c.rpc(input);
  const call = (svc.grpc as unknown as Record<string, GrpcCall>)[camel(method)];
  const err = (await call?.(camelKeys(message), await headers(c.user)).catch(
    (e: unknown) => e,
  )) as {
    code: number;
    metadata: { get(key: string): unknown[] };
  };
  const retryAfter = err.metadata.get("retry-after")[0];
  return {
    code: codeNameOfNumber(err.code),
    status: err.code,
    retryAfter: retryAfter === undefined ? null : String(retryAfter),
  };
}

async function viaGrpcWeb(c: Case, input: Record<string, string>): Promise<Seen> {
  const { method, message } = c.rpc(input);
  const client = svc.grpcWeb as unknown as Record<string, ConnectCall>;
  const err = ConnectError.from(
    await client[camel(method)]?.(camelKeys(message), { headers: await headers(c.user) }).catch(
      (e: unknown) => e,
    ),
  );
  return {
    code: codeNameOfNumber(err.code),
    status: err.code,
    retryAfter: err.metadata.get("retry-after"),
  };
}

type GrpcCall = (message: unknown, metadata: Record<string, string>) => Promise<unknown>;
type ConnectCall = (
  message: unknown,
  options: { headers: Record<string, string> },
) => Promise<unknown>;

const camel = (method: string) => method[0]?.toLowerCase() + method.slice(1);
const camelKeys = (message: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(message).map(([k, v]) => [
      k.replace(/_(\w)/g, (_, c: string) => c.toUpperCase()),
      v,
    ]),
  );
const codeNameOfNumber = (n: number) =>
  n === 0 ? "ok" : (Object.entries(Code).find(([, v]) => v === n)?.[0] ?? String(n));

/** What the table says a caller sees of `meaning` on a transport. */
function expected(meaning: CodeMeaning, byNumber: boolean): Seen {
  return {
    code: byNumber ? codeNameOfNumber(meaning.grpcStatus) : meaning.name,
    status: byNumber ? meaning.grpcStatus : meaning.httpStatus,
    retryAfter: meaning.retryAfterSeconds === undefined ? null : String(meaning.retryAfterSeconds),
  };
}

describe("every error a caller can get is the same on every transport, as the table of codes says", () => {
  for (const c of CASES) {
    it(`${c.name}: ${c.code}`, async () => {
      const input = c.arrange && c.user !== null ? await c.arrange(c.user) : {};
      admission.script = c.script;
      try {
        const meaning = meaningOfName(c.code);
        expect(meaning.name).toBe(c.code);
        expect(await viaRest(c, input)).toEqual(expected(meaning, false));
        expect(await viaConnect(c, input)).toEqual(expected(meaning, false));
        expect(await viaGrpc(c, input)).toEqual(expected(meaning, true));
        expect(await viaGrpcWeb(c, input)).toEqual(expected(meaning, true));
      } finally {
        admission.script = undefined;
      }
    });
  }
});
