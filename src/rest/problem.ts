import { Code, ConnectError } from "@connectrpc/connect";
import { codeHttpStatus, codeName, retryAfterOf } from "../app/codes.js";
import { AnswerConflict, InvalidRequest, NothingDue } from "../app/errors.js";
import type { AppReply } from "../app-server.js";
import { isoTime } from "../domain/iso-time.js";
import { type Problem, problem } from "../edge/problem-json.js";
import { recordOutcome } from "../ops/outcome.js";
import { answerToJson } from "./json.js";
import { MethodNotAllowed } from "./method-not-allowed.js";

/** The detail of a 415: what to send instead (never the type that was sent). */
export const UNSUPPORTED_MEDIA_TYPE =
  "a request body must be JSON, sent with content-type: application/json";

/**
 * The REST gateway's one error mapping: a ConnectError's code gives the status,
 * Fastify's 4xx stay, anything else is an internal error whose cause is not shown.
 */
export function toProblem(err: unknown): Problem {
  if (err instanceof AnswerConflict) {
    const conflict = problem(409, codeName(err.code), err.rawMessage);
    return { ...conflict, stored_answer: answerToJson(err.storedAnswer) };
  }
  if (err instanceof NothingDue) {
    const refused = problem(codeHttpStatus(err.code), codeName(err.code), err.rawMessage);
    const next = err.nextDueAt;
    return { ...refused, next_due_at: next ? isoTime(next.getTime()) : null };
  }
  if (err instanceof InvalidRequest) {
    const invalid = problem(codeHttpStatus(err.code), codeName(err.code), err.rawMessage);
    // RFC 9457's extension member: every field that is wrong, `detail` the first.
    return { ...invalid, errors: err.violations.map(({ field, message }) => ({ field, message })) };
  }
  if (err instanceof ConnectError) {
    const status = codeHttpStatus(err.code);
    return problem(status, codeName(err.code), err.rawMessage);
  }
  if (err instanceof MethodNotAllowed) {
    return problem(405, codeName(Code.Unimplemented), err.message);
  }
  // Fastify's handlerTimeout (REQUEST_TIMEOUT_MS) answers 503 by itself;
  // it is the request's deadline, as for the RPCs.
  if ((err as { code?: unknown }).code === "FST_ERR_HANDLER_TIMEOUT") {
    const code = Code.DeadlineExceeded;
    return problem(
      codeHttpStatus(code),
      codeName(code),
      "the request took longer than its deadline",
    );
  }
  // Fastify found no parser for the body's content type (the REST gateway only reads JSON).
  if ((err as { code?: unknown }).code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return problem(415, codeName(Code.InvalidArgument), UNSUPPORTED_MEDIA_TYPE);
  }
  const status = (err as { statusCode?: unknown }).statusCode;
  if (typeof status === "number" && status >= 400 && status < 500 && err instanceof Error) {
    const code = status === 413 ? Code.ResourceExhausted : Code.InvalidArgument;
    return problem(status, codeName(code), err.message);
  }
  return problem(500, codeName(Code.Internal), "internal error");
}

/** Sends `err` as application/problem+json. */
export function sendProblem(reply: AppReply, err: unknown): AppReply {
  const body = toProblem(err);
  recordOutcome(reply.request, { code: body.code });
  // Fastify says `Connection: close` after a body it could not read, whatever
  // the protocol; HTTP/2 has no such header (Node drops it, with a warning).
  if (reply.request.raw.httpVersionMajor === 2) reply.removeHeader("connection");
  if (body.code === "unauthenticated") {
    // RFC 6750: a bare challenge, or the error the metadata names (an expired token).
    const challenge = err instanceof ConnectError ? err.metadata.get("www-authenticate") : null;
    reply.header("www-authenticate", challenge ?? "Bearer");
  }
  // Shed load, a caller over its share, a database outage: worth retrying, not at once.
  const retryAfter = retryAfterOf(body.code, body.status);
  if (retryAfter !== undefined) reply.header("retry-after", String(retryAfter));
  return reply.code(body.status).type("application/problem+json").send(body);
}
