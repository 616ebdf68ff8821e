import type { Db } from "../db/database.js";
import { findLiveQuiz } from "../db/quizzes-repository.js";
import { primaryReads, type ReadRouting } from "../db/read-routing.js";
import { errors } from "../domain/errors.js";
import type { Quiz, QuizQuestion } from "../domain/quiz.js";
import { isDatabaseId } from "../domain/session.js";
import { requireWellFormed } from "../domain/well-formed.js";
import { toServiceError } from "./service-errors.js";

/** The quiz content use case (GetQuiz), shared by every transport. */
export class Quizzes {
  private readonly reads: ReadRouting;

  /** `reads`: where GetQuiz reads (a read replica, DATABASE_READ_URL); default `db`. */
  constructor(db: Db, reads?: ReadRouting) {
    this.reads = reads ?? primaryReads(db);
  }

  /**
   * A live quiz on a live study guide with its questions by position, read
   * in one round trip. A missing or soft-deleted quiz, one under a
   * soft-deleted study guide, and an id that names no quiz are all the same
   * `not_found` as ListSessions gives.
   */
  async getQuiz(quizId: string): Promise<Quiz> {
    requireWellFormed({ quiz_id: quizId });
    if (!isDatabaseId(quizId)) throw errors.quizNotFound();
    let quiz: Quiz | undefined;
    try {
      quiz = await this.reads.read((db) => findLiveQuiz(db, quizId));
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
