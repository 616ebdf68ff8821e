import type { Db } from "../db/database.js";
import { findLiveQuiz } from "../db/quizzes-repository.js";
import { primaryReads, type ReadRouting } from "../db/read-routing.js";
import { type Clock, systemClock } from "../domain/clock.js";
import type { Quiz, QuizQuestion } from "../domain/quiz.js";
import { isDatabaseId } from "../domain/session.js";
import { errors } from "./errors.js";
import { listQuizzes, type QuizPage } from "./list-quizzes.js";
import { toServiceError } from "./service-errors.js";
import { useCaseRunner } from "./use-case-span.js";

/** The quiz content use cases (GetQuiz, ListQuizzes), shared by every transport. */
export class Quizzes {
  private readonly reads: ReadRouting;

  /** `reads`: where GetQuiz and ListQuizzes read (a read replica, DATABASE_READ_URL); default `db`. */
  constructor(
    db: Db,
    reads?: ReadRouting,
    private readonly clock: Clock = systemClock,
  ) {
    this.reads = reads ?? primaryReads(db);
  }

  /**
   * A page of live quizzes with `userId`'s sessions in progress on each
   * (list-quizzes.ts). Each use case takes the call's signal (see PracticeSessions).
   */
  listQuizzes(
    userId: string,
    input: { limit?: number | undefined; cursor?: string | undefined },
    signal?: AbortSignal,
  ): Promise<QuizPage> {
    return this.#run("listQuizzes", signal, (reads) =>
      listQuizzes(reads, this.clock, userId, input),
    );
  }

  /**
   * A live quiz with its questions by position, in one round trip; anything
   * else is the same `not_found` as ListSessions gives.
   */
  getQuiz(quizId: string, signal?: AbortSignal): Promise<Quiz> {
    return this.#run("getQuiz", signal, (reads) => this.#getQuiz(reads, quizId));
  }

  /** Runs a use case in its span, with its statements stopped when `signal` aborts. */
  readonly #run = useCaseRunner((signal) => this.reads.forCall(signal));

  async #getQuiz(reads: ReadRouting, quizId: string): Promise<Quiz> {
    if (!isDatabaseId(quizId)) throw errors.quizNotFound();
    let quiz: Quiz | undefined;
    try {
      quiz = await reads.read((db) => findLiveQuiz(db, quizId));
    } catch (err) {
      throw toServiceError(err);
    }
    if (quiz === undefined) throw errors.quizNotFound();
    const questions = [...quiz.questions]
      .sort(inQuizOrder)
      // Numbered 1..n in (position, id) order, as a snapshot taken now would be.
      .map((q, i): QuizQuestion => ({ ...q, position: i + 1 }));
    return { ...quiz, questions };
  }
}

/** By position, then by id (decimal text: shorter is smaller). */
function inQuizOrder(a: QuizQuestion, b: QuizQuestion): number {
  if (a.position !== b.position) return a.position - b.position;
  return a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
