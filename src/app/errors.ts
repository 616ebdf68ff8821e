import { Code, ConnectError } from "@connectrpc/connect";
import type { Answer } from "../domain/session.js";

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
        "www-authenticate": `Bearer error="${error}", error_description="${description}"`,
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
} as const;

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
