import { type CompiledQuery, sql, type Transaction } from "kysely";
import type { EventType } from "../domain/events.js";
import type { Database, Db } from "./database.js";

/**
 * SQL of the transactional outbox (practice_outbox): the use cases add rows
 * in their own transactions; the relay (src/events/relay.ts) claims, then
 * deletes them once published.
 */

/** An event encoded for the outbox (src/db/outbox-event.ts), published as it is. */
export interface OutboxEvent {
  /** The CloudEvents `id` (a UUIDv7), also the JetStream message id. */
  id: string;
  type: EventType;
  /** The CloudEvents `subject`. */
  sessionId: string;
  /** When the change happened (the CloudEvents `time`). */
  time: Date;
  /** The whole CloudEvent, JSON (structured mode): what is published. */
  json: string;
  /** The trace context of the change that made it (header name to value, JSON); none untraced. */
  traceContext?: string;
}

/**
 * Adds events to the outbox. Call it in the transaction of the change they
 * describe, so that they commit, or roll back, with it.
 */
export async function insertEvents(
  trx: Transaction<Database>,
  events: readonly OutboxEvent[],
): Promise<void> {
  if (events.length === 0) return;
  await trx.executeQuery(insertEventsStatement(trx, events));
}

/** insertEvents' statement (one event at least), to run with others (answer-writes.ts). */
export function insertEventsStatement(
  trx: Transaction<Database>,
  events: readonly OutboxEvent[],
): CompiledQuery {
  return trx
    .insertInto("practice_outbox")
    .values(
      events.map((e) => ({
        event_id: e.id,
        type: e.type,
        session_id: e.sessionId,
        created_at: e.time,
        body: e.json,
        trace_context: e.traceContext ?? null,
      })),
    )
    .compile();
}

/** An outbox row as the relay reads it. */
export interface OutboxRow {
  seq: number;
  eventId: string;
  type: string;
  sessionId: string;
  createdAt: Date;
  body: string;
  /** See `OutboxEvent.traceContext`. */
  traceContext: string | null;
}

/**
 * The oldest `limit` rows no relay holds (no lease, or one that ended before
 * `nowMs`), locked until the transaction ends. On MySQL/MariaDB rows another
 * relay is claiming right now are skipped (`SKIP LOCKED`), not waited for;
 * SQLite runs one write transaction at a time anyway.
 */
export async function findClaimable(
  trx: Transaction<Database>,
  limit: number,
  nowMs: number,
): Promise<OutboxRow[]> {
  const rows = await trx
    .selectFrom("practice_outbox")
    .select(["seq", "event_id", "type", "session_id", "created_at", "body", "trace_context"])
    .where("lease_until", "<", nowMs)
    .orderBy("seq")
    .limit(limit)
    .forUpdate()
    .skipLocked()
    .execute();
  return rows.map((r) => ({
    seq: Number(r.seq),
    eventId: r.event_id,
    type: r.type,
    sessionId: r.session_id,
    createdAt: r.created_at,
    body: r.body,
    traceContext: r.trace_context,
  }));
}

/** Every outbox row (seq) of these sessions up to `maxSeq`, leased or not. */
export async function findSessionSeqs(
  db: Db,
  sessionIds: readonly string[],
  maxSeq: number,
): Promise<{ sessionId: string; seq: number }[]> {
  if (sessionIds.length === 0) return [];
  const rows = await db
    .selectFrom("practice_outbox")
    .select(["session_id", "seq"])
    .where("session_id", "in", sessionIds)
    .where("seq", "<=", maxSeq)
    .execute();
  return rows.map((r) => ({ sessionId: r.session_id, seq: Number(r.seq) }));
}

/** Claims rows for a relay until `untilMs` (epoch ms). */
export async function leaseEvents(
  trx: Transaction<Database>,
  seqs: readonly number[],
  untilMs: number,
): Promise<void> {
  if (seqs.length === 0) return;
  await trx
    .updateTable("practice_outbox")
    .set({ lease_until: untilMs })
    .where("seq", "in", seqs)
    .execute();
}

/** Gives claimed rows back (not published): the next poll takes them again. */
export async function releaseEvents(db: Db, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await db
    .updateTable("practice_outbox")
    .set({ lease_until: 0 })
    .where("seq", "in", seqs)
    .execute();
}

/** Removes published rows, in one statement. */
export async function deleteEvents(db: Db, seqs: readonly number[]): Promise<void> {
  if (seqs.length === 0) return;
  await db.deleteFrom("practice_outbox").where("seq", "in", seqs).execute();
}

/** Rows waiting in the outbox, and the time of the oldest (null when empty). */
export async function outboxBacklog(db: Db): Promise<{ count: number; oldest: Date | null }> {
  const row = await db
    .selectFrom("practice_outbox")
    .select([sql<number | string>`COUNT(*)`.as("count"), sql<string | null>`MIN(seq)`.as("first")])
    .executeTakeFirstOrThrow();
  const count = Number(row.count);
  if (count === 0 || row.first === null) return { count, oldest: null };
  const oldest = await db
    .selectFrom("practice_outbox")
    .select("created_at")
    .where("seq", "=", Number(row.first))
    .executeTakeFirst();
  return { count, oldest: oldest?.created_at ?? null };
}
