import { v7 as uuidv7 } from "uuid";
import { withSignal } from "../db/cancel.js";
import type { Db } from "../db/database.js";
import { primaryReads, type ReadRouting } from "../db/read-routing.js";
import type { Clock } from "../domain/clock.js";
import type { Session, SessionMode, SessionProgress } from "../domain/session.js";
import {
  type AnswerInput,
  type AnswerResult,
  completeSession,
  submitAnswer,
} from "./answer-and-complete.js";
import { limitsOf } from "./call-limits.js";
import {
  getSession,
  type ListSessionsInput,
  listSessions,
  type SessionDetail,
  type SessionPage,
} from "./read-sessions.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry.js";
import { type DuePage, type DuePageInput, listDueQuestions } from "./review.js";
import type { SessionsContext } from "./sessions-context.js";
import { type StartResult, startSession } from "./start-session.js";
import { useCaseRunner } from "./use-case-span.js";

export type { AnswerInput, AnswerResult } from "./answer-and-complete.js";
export type { ListSessionsInput, SessionDetail, SessionPage } from "./read-sessions.js";
export type { StartResult } from "./start-session.js";

export interface PracticeSessionsOptions {
  /** Where ListSessions and GetSession read (default: `db`). */
  reads?: ReadRouting;
  /** How writes that lost a race run again (in a call, within its budget: edge/call-limits.ts). */
  retry?: RetryPolicy;
}

/**
 * The practice sessions use cases, shared by every transport. They throw only
 * `ConnectError`s; a database failure is kept as the cause for logs, never sent.
 * Each takes the call's signal: when it aborts (the deadline passed, the
 * client left), the statement in flight is stopped and its transaction
 * rolled back (db/cancel.ts), so a stopped write is stored whole or not at all.
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
  listSessions(
    userId: string,
    input: ListSessionsInput,
    signal?: AbortSignal,
  ): Promise<SessionPage> {
    return this.#run("listSessions", signal, (ctx) => listSessions(ctx, userId, input));
  }

  /** See start-session.ts `startSession`; `mode` defaults to the whole quiz. */
  startSession(
    userId: string,
    quizId: string,
    mode?: SessionMode,
    signal?: AbortSignal,
  ): Promise<StartResult> {
    return this.#run("startSession", signal, (ctx) => startSession(ctx, userId, quizId, mode));
  }

  /** See review.ts `listDueQuestions`. */
  listDueQuestions(
    userId: string,
    quizId: string,
    page?: DuePageInput,
    signal?: AbortSignal,
  ): Promise<DuePage> {
    return this.#run("listDueQuestions", signal, (ctx) =>
      listDueQuestions(ctx, userId, quizId, page),
    );
  }

  /** See read-sessions.ts `getSession`. */
  getSession(userId: string, sessionId: string, signal?: AbortSignal): Promise<SessionDetail> {
    return this.#run("getSession", signal, (ctx) => getSession(ctx, userId, sessionId));
  }

  /** See answer-and-complete.ts `submitAnswer`. */
  submitAnswer(userId: string, input: AnswerInput, signal?: AbortSignal): Promise<AnswerResult> {
    return this.#run("submitAnswer", signal, (ctx) => submitAnswer(ctx, userId, input));
  }

  /** See answer-and-complete.ts `completeSession`. */
  completeSession(
    userId: string,
    sessionId: string,
    signal?: AbortSignal,
  ): Promise<Session & SessionProgress> {
    return this.#run("completeSession", signal, (ctx) => completeSession(ctx, userId, sessionId));
  }

  /** Runs a use case in its span, with its statements stopped when `signal` aborts. */
  readonly #run = useCaseRunner((signal): SessionsContext => {
    if (signal === undefined) return this.#ctx;
    const limits = limitsOf(signal);
    return {
      ...this.#ctx,
      db: withSignal(this.#ctx.db, signal),
      reads: this.#ctx.reads.forCall(signal),
      retry: {
        ...this.#ctx.retry,
        budgetMs: limits?.retryBudgetMs() ?? this.#ctx.retry.budgetMs,
        signal,
      },
    };
  });
}
