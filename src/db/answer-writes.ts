import type { CompiledQuery, DialectAdapter, Kysely, Transaction } from "kysely";
import type { SessionEvent } from "../domain/events.js";
import type { QuestionMemory } from "../domain/memory.js";
import type { Answer } from "../domain/session.js";
import { forCallOf, rawStatement } from "./cancel.js";
import type { Database, Db } from "./database.js";
import { inlineValues } from "./inline-values.js";
import { outboxEvent } from "./outbox-event.js";
import { insertEventsStatement } from "./outbox-repository.js";
import { insertAnswerStatement } from "./practice-sessions-repository.js";
import { type MemoryKey, requireSaved, saveMemoryStatement } from "./question-memory-repository.js";
import { STATEMENT_SEPARATOR, severalStatements } from "./statement-marker.js";
import { inTransaction, type Work } from "./unit-of-work.js";

/** What an answer writes once it is counted. */
export interface AnswerWrites {
  sessionId: string;
  answer: Answer;
  memory: { key: MemoryKey; previous: QuestionMemory | undefined; next: QuestionMemory };
  /** The change's events, encoded for the outbox here. */
  events: readonly [SessionEvent, ...SessionEvent[]];
}

/**
 * An answer's writes after its count, in its transaction: the answer
 * (insertAnswer), the learner's memory of the question (saveMemory) and the
 * event (insertEvents). On MySQL/MariaDB the three statements go to the
 * server in one request, a round trip instead of three, their values as
 * literals no sql_mode reads differently (inline-values.ts); elsewhere
 * (SQLite, in-process; Galera, or not yet known) one after another. Fails as
 * the three would one by one: a duplicate key
 * (the answer's or the memory's), a foreign key (the question is gone),
 * MemoryMoved; the server runs none after the one that fails, and the
 * transaction rolls back.
 */
export async function writeAnswer(trx: Transaction<Database>, w: AnswerWrites): Promise<void> {
  const { key, previous, next } = w.memory;
  const affected = await executeInTurn(trx, [
    insertAnswerStatement(trx, {
      session_id: w.sessionId,
      question_id: w.answer.questionId,
      user_answer: w.answer.userAnswer,
      is_correct: w.answer.isCorrect,
      answered_at: w.answer.answeredAt,
    }),
    saveMemoryStatement(trx, key, previous, next),
    insertEventsStatement(
      trx,
      w.events.map((e) => outboxEvent(e)),
    ),
  ]);
  requireSaved(previous, affected[1] ?? 0);
}

/** Databases whose connections take several statements in one request, and whether they may now. */
const oneRequestAllowed = new WeakMap<DialectAdapter, () => boolean>();
/** Those databases, by the database whose answers they carry. */
const answersOf = new WeakMap<DialectAdapter, Kysely<Database>>();

/**
 * Gives `db`'s answers `answers`, a database on the same server whose connections take
 * several statements in one request (no other connection does: a second statement in a
 * request is refused there), and lets them send their writes in one request while
 * `allowed()` (connect.ts).
 */
export function allowWritesTogether(
  db: Kysely<Database>,
  answers: Kysely<Database>,
  allowed: () => boolean,
): void {
  answersOf.set(db.getExecutor().adapter, answers);
  oneRequestAllowed.set(answers.getExecutor().adapter, allowed);
}

/**
 * Runs an answer's `work` in one transaction on the database allowWritesTogether gave `db`
 * (for the same call), or on `db` itself where none was given (SQLite).
 */
export function inAnswerTransaction<T>(db: Db, work: (trx: Work) => Promise<T>): Promise<T> {
  return inTransaction(answersDatabase(db), work);
}

function answersDatabase(db: Db): Db {
  const answers = answersOf.get(db.getExecutor().adapter);
  return answers === undefined ? db : forCallOf(answers, db);
}

/** Runs statements in order, as one request where the database allows; the rows each affected. */
async function executeInTurn(
  trx: Transaction<Database>,
  statements: CompiledQuery[],
): Promise<number[]> {
  if (oneRequestAllowed.get(trx.getExecutor().adapter)?.() !== true) {
    const affected: number[] = [];
    for (const s of statements) {
      affected.push(Number((await trx.executeQuery(s)).numAffectedRows ?? 0));
    }
    return affected;
  }
  const joined = severalStatements(
    rawStatement(
      trx,
      statements.map((s) => inlineValues(s.sql, s.parameters)).join(STATEMENT_SEPARATOR),
      [],
    ),
  );
  // mysql2 answers a multi-statement query with one result header per statement.
  const { rows } = await trx.executeQuery<{ affectedRows?: number }>(joined);
  return rows.map((r) => Number(r.affectedRows ?? 0));
}
