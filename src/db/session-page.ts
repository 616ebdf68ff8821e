import type { CompiledQuery, SelectQueryBuilder } from "kysely";
import type { Cursor } from "../domain/cursor.js";
import type { SessionStatus, SessionSummary } from "../domain/session.js";
import { rawStatement } from "./cancel.js";
import type { Database, Db } from "./database.js";
import { toSummary } from "./decode.js";
import { liveQuiz, plainSummaryColumns, summaryColumns } from "./session-columns.js";

export interface SessionPageQuery {
  userId: string;
  quizId: string;
  status: SessionStatus | undefined;
  /** Rows to read: the page size plus one, to learn whether more exist. */
  take: number;
  after: Cursor | undefined;
}

/**
 * One page of a user's sessions on a quiz, newest first, in one statement
 * that also checks the quiz: undefined when it is not live (a single row with
 * a null `id` is a live quiz and an empty page). The keyset is written
 * `started_at <= t AND (started_at < t OR id < i)`: MariaDB scans the whole
 * history for the row-value form. sessions_by_start must cover every column
 * selected here.
 */
export async function findSessionPage(
  db: Db,
  q: SessionPageQuery,
): Promise<SessionSummary[] | undefined> {
  const dialect = db.getExecutor().adapter;
  let templates = pageTemplates.get(dialect);
  if (templates === undefined) {
    templates = new Map();
    pageTemplates.set(dialect, templates);
  }
  const shape = `${q.status ?? "any"}/${q.after === undefined ? "first" : "after"}`;
  let template = templates.get(shape);
  if (template === undefined) {
    const after = q.after && { startedAt: SLOT_STARTED_AT, id: SLOT_ID };
    const slots = { ...q, userId: SLOT_USER, quizId: SLOT_QUIZ, take: SLOT_TAKE, after };
    template = pageQuery(db, slots).compile();
    templates.set(shape, template);
  }
  const values = new Map<unknown, unknown>([
    [SLOT_USER, q.userId],
    [SLOT_QUIZ, q.quizId],
    [SLOT_TAKE, q.take],
    [SLOT_STARTED_AT, q.after?.startedAt],
    [SLOT_ID, q.after?.id],
  ]);
  const parameters = template.parameters.map((p) => (values.has(p) ? values.get(p) : p));
  const { rows } = await db.executeQuery<PageRow>(rawStatement(db, template.sql, parameters));
  if (rows.length === 0) return undefined;
  return rows.flatMap((row) => toSummary(row) ?? []);
}

/**
 * The page statement is compiled once per shape (status filter, first page or
 * not) and dialect adapter with these placeholders, which each call swaps for
 * its own values: compiling with Kysely per request is a large share of a
 * list's CPU.
 */
const pageTemplates = new WeakMap<object, Map<string, CompiledQuery>>();
const SLOT_USER = "\u0000user";
const SLOT_QUIZ = "\u0000quiz";
const SLOT_ID = "\u0000id";
const SLOT_TAKE = -7_654_321;
const SLOT_STARTED_AT = new Date(0);

type PageRow = Awaited<ReturnType<ReturnType<typeof pageQuery>["execute"]>>[number];

function pageQuery(db: Db, q: SessionPageQuery) {
  let page = db
    .selectFrom("practice_sessions")
    .select(summaryColumns)
    .where("user_id", "=", q.userId)
    .where("quiz_id", "=", q.quizId);
  if (q.status === "active") page = page.where("active", "=", 1);
  if (q.status === "completed") page = page.where("completed_at", "is not", null);
  if (q.after !== undefined) {
    const { startedAt, id } = q.after;
    page = page
      .where("started_at", "<=", startedAt)
      .where((eb) => eb.or([eb("started_at", "<", startedAt), eb("id", "<", id)]));
  }
  return db
    .selectFrom(liveQuiz(db, q.quizId).as("live"))
    .leftJoin(newestFirst(page).limit(q.take).as("s"), (join) => join.onTrue())
    .select([...plainSummaryColumns.map((c) => `s.${c}` as const), "s.mode_code"])
    .orderBy("s.started_at", "desc")
    .orderBy("s.id", "desc");
}

function newestFirst<O>(query: SelectQueryBuilder<Database, "practice_sessions", O>) {
  return query.orderBy("started_at", "desc").orderBy("id", "desc");
}
