import type { Db } from "../db/database.js";
import {
  findDueMemory,
  findNextDueAt,
  findQuizQuestionsAnswered,
} from "../db/question-memory-repository.js";
import { byDue, type DueQuestion, type DueQuestions } from "../domain/memory.js";
import { isDatabaseId } from "../domain/session.js";
import { errors } from "./errors.js";
import { guard } from "./service-errors.js";
import type { SessionsContext } from "./sessions-context.js";
import { requireWellFormed } from "./well-formed.js";

/**
 * ListDueQuestions: the caller's questions of a live quiz due for review now,
 * earliest due first, then by position; how many live questions they never
 * answered; and when the next one falls due. Only the caller's own memory.
 */
export async function listDueQuestions(
  { reads, clock }: SessionsContext,
  userId: string,
  quizId: string,
): Promise<DueQuestions> {
  requireWellFormed({ quiz_id: quizId });
  if (!isDatabaseId(quizId)) throw errors.quizNotFound();
  const now = clock.now();
  const due = await guard(() => reads.read((db) => findDueQuestions(db, userId, quizId, now)));
  if (due === undefined) throw errors.quizNotFound();
  return due;
}

/**
 * What is due at `now` on a quiz for a learner, or undefined if the quiz is
 * not live. Positions are the quiz's now (1..n by position, then id, as
 * GetQuiz numbers them); memory of a question no longer in the quiz is left out.
 */
export async function findDueQuestions(
  db: Db,
  userId: string,
  quizId: string,
  now: Date,
): Promise<DueQuestions | undefined> {
  const [questions, due, nextDueAt] = await Promise.all([
    findQuizQuestionsAnswered(db, userId, quizId),
    findDueMemory(db, userId, quizId, now),
    findNextDueAt(db, userId, quizId, now),
  ]);
  if (questions === undefined) return undefined;
  const positions = new Map(questions.map((q, i) => [q.id, i + 1]));
  const dueQuestions = due
    .flatMap((m): DueQuestion[] => {
      const position = positions.get(m.questionId);
      return position === undefined ? [] : [{ ...m, position }];
    })
    .sort(byDue);
  return {
    questions: dueQuestions,
    newCount: questions.filter((q) => !q.answered).length,
    nextDueAt,
  };
}
