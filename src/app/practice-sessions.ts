import { v7 as uuidv7 } from "uuid";
import type { Db } from "../db/database.js";
import { primaryReads, type ReadRouting } from "../db/read-routing.js";
import type { Clock } from "../domain/clock.js";
import type { Session, SessionProgress } from "../domain/session.js";
import {
  type AnswerInput,
  type AnswerResult,
  completeSession,
  submitAnswer,
} from "./answer-and-complete.js";
import {
  getSession,
  type ListSessionsInput,
  listSessions,
  type SessionDetail,
  type SessionPage,
} from "./read-sessions.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry.js";
import type { SessionsContext } from "./sessions-context.js";
import { type StartResult, startSession } from "./start-session.js";
import { inUseCaseSpan } from "./use-case-span.js";

export type { AnswerInput, AnswerResult } from "./answer-and-complete.js";
export type { ListSessionsInput, SessionDetail, SessionPage } from "./read-sessions.js";
export type { StartResult } from "./start-session.js";

export interface PracticeSessionsOptions {
  /** Where ListSessions and GetSession read (default: `db`). */
  reads?: ReadRouting;
  /** How writes that lost a race run again (budget: the request's deadline). */
  retry?: RetryPolicy;
}

/**
 * The practice sessions use cases, shared by every transport. They throw only
 * `ConnectError`s; a database failure is kept as the cause for logs, never sent.
 */
export class PracticeSessions {
  readonly #ctx: SessionsContext;

  constructor(
    db: Db,
    clock: Clock,
    newSessionId: () => string = uuidv7,
    options: PracticeSessionsOptions = {},
  ) {
    this.#ctx = {
      db,
      clock,
      newSessionId,
      reads: options.reads ?? primaryReads(db),
      retry: options.retry ?? DEFAULT_RETRY_POLICY,
    };
  }

  /** See read-sessions.ts `listSessions`. */
  listSessions(userId: string, input: ListSessionsInput): Promise<SessionPage> {
    return inUseCaseSpan("listSessions", () => listSessions(this.#ctx, userId, input));
  }

  /** See start-session.ts `startSession`. */
  startSession(userId: string, quizId: string): Promise<StartResult> {
    return inUseCaseSpan("startSession", () => startSession(this.#ctx, userId, quizId));
  }

  /** See read-sessions.ts `getSession`. */
  getSession(userId: string, sessionId: string): Promise<SessionDetail> {
    return inUseCaseSpan("getSession", () => getSession(this.#ctx, userId, sessionId));
  }

  /** See answer-and-complete.ts `submitAnswer`. */
  submitAnswer(userId: string, input: AnswerInput): Promise<AnswerResult> {
    return inUseCaseSpan("submitAnswer", () => submitAnswer(this.#ctx, userId, input));
  }

  /** See answer-and-complete.ts `completeSession`. */
  completeSession(userId: string, sessionId: string): Promise<Session & SessionProgress> {
    return inUseCaseSpan("completeSession", () => completeSession(this.#ctx, userId, sessionId));
  }
}
