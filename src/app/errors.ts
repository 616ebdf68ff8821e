import { Code, ConnectError } from "@connectrpc/connect";
import type { Answer } from "../domain/session.js";
import { type CodeMeaning, HTTP_REFUSALS, meaningOf } from "./codes.js";
import { HEADER_WWW_AUTHENTICATE } from "./headers.js";

/**
 * The errors the service gives its callers, one constructor each, as
 * `ConnectError`s: every transport speaks Connect's codes (REST maps them to
 * HTTP). Messages are fixed strings that never echo input, so nothing leaks.
 */
export const errors = {
  /** Quiz missing, soft-deleted, under a soft-deleted study guide, or not a quiz id. */
  quizNotFound: () => new ConnectError("quiz not found", Code.NotFound),
  /** Another user's session, or an id that names none: one body for both. */
  sessionNotFound: () => new ConnectError("session not found", Code.NotFound),
  sessionCompleted: () => new ConnectError("session is already completed", Code.FailedPrecondition),
  /** An in-progress session started over 7 days ago (domain/session.ts isStale). */
  sessionExpired: () =>
    new ConnectError(
      "session expired: it was started more than 7 days ago; start the quiz again for a new session",
      Code.FailedPrecondition,
    ),
  questionNotInSession: () =>
    new InvalidRequest([
      {
        field: "question_id",
        rule: "question_id.in_session",
        message: "question_id is not a question of this session",
      },
    ]),
  /** A cursor this service did not make (or one of another list). */
  invalidCursor: () =>
    new InvalidRequest([
      {
        field: "cursor",
        rule: "cursor.issued",
        message: "cursor is not a next_cursor this service returned",
      },
    ]),
  /** A different answer to a question the session has answered already. */
  answerConflict: (stored: Answer) => new AnswerConflict(stored),
  routeNotFound: () => new ConnectError("no such route", Code.NotFound),
  quizHasNoQuestions: () =>
    new ConnectError("quiz has no questions to practise", Code.FailedPrecondition),
  /** A review start on a quiz none of whose questions is due for the caller. */
  nothingDue: (nextDueAt: Date | null) => new NothingDue(nextDueAt),
  /** A missed start when the latest completed session has no wrong or unanswered question (or none is completed). */
  nothingMissed: (why: string) =>
    new ConnectError(`nothing to practise again: ${why}`, Code.FailedPrecondition),
  invalidArgument: (message: string) => new ConnectError(message, Code.InvalidArgument),
  unauthenticated: (message = "missing or invalid bearer token") =>
    new ConnectError(message, Code.Unauthenticated),
  /**
   * A credential refused (auth/refusals.ts), with RFC 6750's challenge, sent as
   * WWW-Authenticate (REST, Connect) or metadata (gRPC, gRPC-Web). `description`
   * is printable ASCII without a double quote or a backslash (RFC 6750's
   * error_description), so it goes in the quoted string as it is.
   */
  tokenRefused: (error: "invalid_request" | "invalid_token", description: string) =>
    new ConnectError(
      description,
      Code.Unauthenticated,
      new Headers({
        [HEADER_WWW_AUTHENTICATE]: `Bearer error="${error}", error_description="${description}"`,
      }),
    ),
  unavailable: (cause?: unknown) =>
    new ConnectError(
      "service temporarily unavailable, try again",
      Code.Unavailable,
      undefined,
      undefined,
      cause,
    ),
  canceled: () => new ConnectError("the client cancelled the call", Code.Canceled),
  internal: (cause?: unknown) =>
    new ConnectError("internal error", Code.Internal, undefined, undefined, cause),
  /** The call's deadline passed, on every transport: 504 / DEADLINE_EXCEEDED. */
  deadlineExceeded: () =>
    new ConnectError("the request took longer than its deadline", Code.DeadlineExceeded),
  /** Why a call's signal aborts once it has been answered: nobody waits for its work any more. */
  answered: () => new ConnectError("the call has been answered", Code.Canceled),
  /** The client reset its HTTP/2 stream with `h2Code` (its name, or its number in hex). */
  clientReset: (h2Code: string) =>
    new ConnectError(`the client reset the stream (${h2Code})`, Code.Canceled),
  /** Shed for load: `unavailable` (REST 503), safe to retry. */
  overloaded: () => new ConnectError("server overloaded, try again", Code.Unavailable),
  /** Over the caller's share of the queue: `resource_exhausted` (REST 429). */
  overShare: () =>
    new ConnectError(
      "too many of your requests are waiting: try again after Retry-After",
      Code.ResourceExhausted,
    ),
  /** How a long stream ends when the server drains. */
  shuttingDown: () => new ConnectError("the server is shutting down", Code.Unavailable),
  /** A health check of a service this server does not have. */
  unknownService: () => new ConnectError("unknown service", Code.NotFound),
  /** Over the open streams a connection, or the server, may have. */
  tooManyStreams: () => new ConnectError("too many open streams", Code.ResourceExhausted),
  /** A binary request message that does not parse: Connect's own words for it. */
  parseBinary: (reason: string) =>
    new ConnectError(`parse binary: ${reason}`, Code.InvalidArgument),
  /** An answer over `writeMaxBytes`: Connect's serialization's own words. */
  writeTooLarge: (size: number, writeMaxBytes: number) =>
    new ConnectError(
      `message size ${size} is larger than configured writeMaxBytes ${writeMaxBytes}`,
      Code.ResourceExhausted,
    ),
  /** A request's head over the limit: 431, `resource_exhausted` on RPC transports. */
  headTooLarge: (detail: string) => new RefusedRequest(detail, HTTP_REFUSALS.headTooLarge),
  /** A body in a type the route does not read: 415, `unimplemented`. */
  unsupportedMediaType: (detail: string) =>
    new RefusedRequest(detail, HTTP_REFUSALS.unsupportedMediaType),
} as const;

/**
 * A refusal HTTP has a status of its own for (codes.ts `HTTP_REFUSALS`):
 * its code on every transport, and that status where HTTP's is said.
 */
export class RefusedRequest extends ConnectError {
  constructor(
    message: string,
    readonly refusal: CodeMeaning,
  ) {
    super(message, refusal.grpcStatus as Code);
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return Function.prototype[Symbol.hasInstance].call(RefusedRequest, value);
  }
}

/** What an error the service raises means (its row, or HTTP's refusal it is). */
export function meaningOfError(err: ConnectError): CodeMeaning {
  return err instanceof RefusedRequest ? err.refusal : meaningOf(err.code);
}

/**
 * One mistake in a request: the field (its path as the proto names it, snake_case), the id of
 * the rule it breaks (protovalidate's, or one of the service's own: `question_id.in_session`,
 * `cursor.issued`), and what is wrong, for people.
 */
export interface FieldViolation {
  readonly field: string;
  readonly rule: string;
  readonly message: string;
}

/**
 * `invalid_argument` naming every field of the request that is wrong; its message is the
 * first one's. `details` are the transport's own form of them (RPC: buf.validate.Violations).
 */
export class InvalidRequest extends ConnectError {
  constructor(
    readonly violations: readonly FieldViolation[],
    details: ConstructorParameters<typeof ConnectError>[3] = [],
  ) {
    super(violations[0]?.message ?? "invalid request", Code.InvalidArgument, undefined, details);
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return Function.prototype[Symbol.hasInstance].call(InvalidRequest, value);
  }
}

/**
 * `already_exists` for a different answer to an answered question, carrying the
 * stored answer so a client can tell the learner what counts.
 */
export class AnswerConflict extends ConnectError {
  constructor(readonly storedAnswer: Answer) {
    super("question already answered in this session", Code.AlreadyExists);
  }

  // ConnectError's own check matches any ConnectError-shaped value, which
  // subclasses inherit: this one matches only its own instances.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return Function.prototype[Symbol.hasInstance].call(AnswerConflict, value);
  }
}

/**
 * `failed_precondition` for a review start when no question is due, carrying
 * when the next one is (null: the caller has answered none yet).
 */
export class NothingDue extends ConnectError {
  constructor(readonly nextDueAt: Date | null) {
    super("no question of this quiz is due for review yet", Code.FailedPrecondition);
  }

  static override [Symbol.hasInstance](value: unknown): boolean {
    return Function.prototype[Symbol.hasInstance].call(NothingDue, value);
  }
}
