import { Code, ConnectError } from "@connectrpc/connect";
import { errorCodes } from "fastify";
import {
  type CodeMeaning,
  HTTP_REFUSALS,
  httpRefusalOf,
  meaningOf,
  meaningOfAnswer,
  retryAfterHeaders,
} from "../app/codes.js";
import {
  AnswerConflict,
  errors,
  InvalidRequest,
  meaningOfError,
  NothingDue,
} from "../app/errors.js";
import { HEADER_CONNECTION, HEADER_WWW_AUTHENTICATE } from "../app/headers.js";
import type { AppReply } from "../app-server.js";
import { isoTime } from "../domain/iso-time.js";
import { type Problem, problem } from "../edge/problem-document.js";
import { recordOutcome } from "../ops/outcome.js";
import { answerToJson } from "./json.js";
import { MethodNotAllowed } from "./method-not-allowed.js";

/** The detail of a 415: what to send instead (never the type that was sent). */
export const UNSUPPORTED_MEDIA_TYPE =
  "a request body must be JSON, sent with content-type: application/json";

/**
 * The REST gateway's one error mapping: an error's meaning (codes.ts) gives
 * the status and code, Fastify's 4xx keep their status, anything else is an
 * internal error whose cause is not shown.
 */
export function toProblem(err: unknown): Problem {
  if (err instanceof ConnectError) {
    const refused = problem(meaningOfError(err), err.rawMessage);
    if (err instanceof AnswerConflict) {
      return { ...refused, stored_answer: answerToJson(err.storedAnswer) };
    }
    if (err instanceof NothingDue) {
      const next = err.nextDueAt;
      return { ...refused, next_due_at: next ? isoTime(next.getTime()) : null };
    }
    if (err instanceof InvalidRequest) {
      // RFC 9457's extension member: every field that is wrong, `detail` the first.
      return {
        ...refused,
        errors: err.violations.map(({ field, message }) => ({ field, message })),
      };
    }
    return refused;
  }
  if (err instanceof MethodNotAllowed) return problem(HTTP_REFUSALS.methodNotAllowed, err.message);
  // Fastify found no parser for the body's content type (the REST gateway only reads JSON).
  if (err instanceof errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE) {
    return toProblem(errors.unsupportedMediaType(UNSUPPORTED_MEDIA_TYPE));
  }
  const status = (err as { statusCode?: unknown }).statusCode;
  if (typeof status === "number" && status >= 400 && status < 500 && err instanceof Error) {
    return problem(fastifyRefusal(status), err.message);
  }
  return toProblem(errors.internal());
}

/** What a 4xx of Fastify's means: HTTP's refusal of that status, else `invalid_argument`. */
function fastifyRefusal(status: number): CodeMeaning {
  return httpRefusalOf(status) ?? { ...meaningOf(Code.InvalidArgument), httpStatus: status };
}

/** Sends `err` as application/problem+json. */
export function sendProblem(reply: AppReply, err: unknown): AppReply {
  const body = toProblem(err);
  recordOutcome(reply.request, { code: body.code });
  // Fastify says `Connection: close` after a body it could not read, whatever
  // the protocol; HTTP/2 has no such header (Node drops it, with a warning).
  if (reply.request.raw.httpVersionMajor === 2) reply.removeHeader(HEADER_CONNECTION);
  const meaning = meaningOfAnswer(body.code, body.status);
  if (meaning.grpcStatus === Code.Unauthenticated) {
    // RFC 6750: a bare challenge, or the error the metadata names (an expired token).
    const challenge =
      err instanceof ConnectError ? err.metadata.get(HEADER_WWW_AUTHENTICATE) : null;
    reply.header(HEADER_WWW_AUTHENTICATE, challenge ?? "Bearer");
  }
  // Shed load, a caller over its share, a database outage: worth retrying, not at once.
  reply.headers(retryAfterHeaders(meaning));
  return reply.code(body.status).type("application/problem+json").send(body);
}
