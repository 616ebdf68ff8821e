import { Code } from "@connectrpc/connect";
import { codeFromString, codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import { expect } from "vitest";
import { httpRefusalOf } from "../../../src/app/codes.js";
import { expectedRest } from "./oracle.js";
import type { RestRequest } from "./requests.js";
import type { Answer } from "./send.js";
import type { FuzzWorld } from "./world.js";

/**
 * The checks every generated answer goes through: no 5xx (but the two the
 * library itself decides), the error shape of its transport, the HTTP status
 * that matches its code, and no session of another user.
 */

/** What would be the service's internals in an answer: SQL, a database error, a stack frame. */
export const LEAK_LIKE = /SELECT|practice_sessions|sqlMessage|ER_|\.ts:/;

const HTTP_OK_FOR_CONNECT_ERRORS = new Set([400, 401, 404, 408, 409, 413, 415, 429, 499]);

/**
 * A REST error body: problem+json whose status is the one its code maps to, with no internals;
 * an `invalid_argument` may name its fields (`errors`, the first one's message in `detail`).
 */
export function expectProblem(body: unknown, status: number) {
  const { errors, ...problem } = body as { errors?: { field: string; message: string }[] };
  expect(problem).toEqual({
    type: expect.any(String),
    title: expect.any(String),
    status,
    detail: expect.any(String),
    code: expect.any(String),
  });
  const code = (body as { code: string }).code;
  if (errors !== undefined) {
    expect(code).toBe("invalid_argument");
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors)
      expect(e).toEqual({ field: expect.any(String), message: expect.any(String) });
    expect(errors[0]?.message).toBe((body as { detail: string }).detail);
  }
  // HTTP's own refusals keep their status; every other status is the one Connect's table gives the code.
  const refusal = httpRefusalOf(status);
  if (refusal !== undefined) expect(code).toBe(refusal.name);
  else expect(codeToHttpStatus(codeFromString(code) ?? Code.Unknown)).toBe(status);
  expect(JSON.stringify(body)).not.toMatch(LEAK_LIKE);
}

/** None of `ids` is one of the victim's sessions. */
export function expectNoLeak(world: FuzzWorld, ids: string[]) {
  for (const id of ids) expect(world.victimIds.has(id)).toBe(false);
}

/** Checks a REST answer against the oracle and the error shape; records it. */
export function checkRest(world: FuzzWorld, r: RestRequest, { res, text }: Answer) {
  world.seen.push({ transport: "rest", outcome: String(res.status) });
  expect(res.status, text).toBeLessThan(500);
  const expected = expectedRest(r);
  if (Array.isArray(expected)) expect(expected, `${res.status} ${text}`).toContain(res.status);
  else expect(res.status, text).toBe(expected);
  if (r.method === "HEAD" || r.method === "OPTIONS") return;
  if (res.status >= 400) {
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expectProblem(JSON.parse(text), res.status);
    if (res.status === 401) {
      // RFC 6750's challenge, its description the problem's detail.
      const { detail } = JSON.parse(text) as { detail: string };
      expect(res.headers.get("www-authenticate")).toBe(
        `Bearer error="${/^(no bearer token|the authorization header)/.test(detail) ? "invalid_request" : "invalid_token"}", error_description="${detail}"`,
      );
    }
    return;
  }
  const body = JSON.parse(text) as {
    id?: string;
    quiz_id?: string;
    sessions?: { id: string; quiz_id: string }[];
  };
  if (r.method === "GET") {
    expect(Object.keys(body).sort()).toEqual(["has_more", "next_cursor", "sessions"]);
    expect(Array.isArray(body.sessions)).toBe(true);
    expectNoLeak(world, body.sessions?.map((s) => s.id) ?? []);
    for (const s of body.sessions ?? []) expect(s.quiz_id).toBe(r.quiz.raw);
  } else {
    expectNoLeak(world, [body.id ?? ""]);
    expect(body.quiz_id).toBe(world.live.quizId);
  }
}

/**
 * The one 5xx answer Connect gives to client input, decided by the library,
 * not this service (see docs/reliability.md): `unimplemented` (501) for a
 * request compression it does not support, as the Connect protocol
 * prescribes. (A body that is not valid protobuf, which connect-es calls
 * `internal`, is `invalid_argument` here: patches/@connectrpc+connect+2.2.0.patch.)
 */
const KNOWN_5XX = [
  {
    code: "unimplemented",
    message: /^unknown compression ".*": supported encodings are gzip,br$/s,
  },
];

/** Checks a Connect answer against the expected code(s) and the error shape; records it. */
export function checkConnect(
  world: FuzzWorld,
  { res, text }: Answer,
  expected: string | string[],
  quizId?: string,
) {
  // A client that sets its own deadline (connect-timeout-ms: 0, say) may get
  // deadline_exceeded, which Connect sends as 504: the answer it asked for.
  const askedForDeadline = Array.isArray(expected) && expected.includes("deadline_exceeded");
  if (res.status >= 500 && !(res.status === 504 && askedForDeadline)) {
    const err = JSON.parse(text) as { code?: string; message?: string };
    const known = KNOWN_5XX.find((k) => k.code === err.code && k.message.test(err.message ?? ""));
    expect(known, `${res.status} ${text}`).toBeDefined();
    world.seen.push({ transport: "connect", outcome: `library ${res.status} ${err.code}` });
    return;
  }
  let code = "ok";
  if (res.status === 415) {
    world.seen.push({ transport: "connect", outcome: "415" });
    return;
  }
  if (res.status !== 200) {
    const allowed =
      HTTP_OK_FOR_CONNECT_ERRORS.has(res.status) || (res.status === 504 && askedForDeadline);
    expect(allowed, `${res.status} ${text}`).toBe(true);
    const err = JSON.parse(text) as { code?: string; message?: string };
    expect(err).toMatchObject({ code: expect.any(String) });
    code = err.code ?? "";
    expect(codeToHttpStatus(codeFromString(code) ?? Code.Unknown)).toBe(res.status);
    expect(text).not.toMatch(LEAK_LIKE);
  } else {
    const body = JSON.parse(text) as {
      sessions?: { id: string; quizId: string }[];
      session?: { id: string };
    };
    expectNoLeak(world, [
      ...(body.sessions ?? []).map((s) => s.id),
      ...(body.session ? [body.session.id] : []),
    ]);
    if (quizId !== undefined) for (const s of body.sessions ?? []) expect(s.quizId).toBe(quizId);
  }
  world.seen.push({ transport: "connect", outcome: code });
  if (Array.isArray(expected)) expect(expected, `${code} ${text}`).toContain(code);
  else expect(code, text).toBe(expected);
}
