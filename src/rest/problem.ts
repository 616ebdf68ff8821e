import { Code, ConnectError } from "@connectrpc/connect";
import { AnswerConflict, NothingDue } from "../app/errors.js";
import type { AppReply } from "../app-server.js";
import { isoTime } from "../domain/iso-time.js";
import { RETRY_AFTER_SECONDS } from "../ops/admission.js";
import { recordOutcome } from "../ops/outcome.js";
import { codeHttpStatus, codeName } from "../rpc/connect-code.js";
import { answerToJson } from "./json.js";
import type { AnswerJson } from "./schemas.js";

/** An RFC 9457 problem document, plus the Connect code of the error. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  /** A 409 `already_exists` of an answer: the answer the question has, which stands. */
  stored_answer?: AnswerJson;
  /** A 400 of a review start with nothing due: when the next question is (null: none answered). */
  next_due_at?: string | null;
}

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  499: "Client Closed Request",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

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
  if (err instanceof ConnectError) {
    const status = codeHttpStatus(err.code);
    return problem(status, codeName(err.code), err.rawMessage);
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

function problem(status: number, code: string, detail: string): Problem {
  return { type: "about:blank", title: titleOf(status), status, detail, code };
}

/** The problem `title` of an HTTP status: its reason phrase. */
export function titleOf(status: number): string {
  return TITLES[status] ?? "Error";
}

/** Sends `err` as application/problem+json. */
export function sendProblem(reply: AppReply, err: unknown): AppReply {
  const body = toProblem(err);
  recordOutcome(reply.request, { code: body.code });
  if (body.code === "unauthenticated") {
    // RFC 6750: a bare challenge, or the error the metadata names (an expired token).
    const challenge = err instanceof ConnectError ? err.metadata.get("www-authenticate") : null;
    reply.header("www-authenticate", challenge ?? "Bearer");
  }
  // Shed load or a database outage: worth retrying, not at once.
  if (body.status === 503) reply.header("retry-after", String(RETRY_AFTER_SECONDS));
  return reply.code(body.status).type("application/problem+json").send(body);
}
