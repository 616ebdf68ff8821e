import { createRequire } from "node:module";
import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import {
  type CompiledQuery,
  type Driver,
  Kysely,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  SelectQueryNode,
  type SqliteDatabase,
  SqliteDialect,
  type UnknownRow,
} from "kysely";
import { sleep } from "../domain/clock.js";
import { tracer } from "../tracer.js";
import { endsTransaction, signalOf } from "./cancel.js";
import type { Database } from "./database.js";
import { wrapConnections } from "./wrap-connections.js";

/**
 * The embedded store, SQLite through better-sqlite3, made to behave as MySQL does above src/db/
 * (times, booleans, ids, row locks, another process's lock): docs/decisions.md says how and why.
 */

const LOCK_BACKOFF_MS = [1, 2, 5, 10, 20, 50];

const TIME_COLUMNS = new Set([
  "started_at",
  "completed_at",
  "answered_at",
  "deleted_at",
  "created_at",
  "due_at",
  "last_answered_at",
  "next_due_at",
  // The memory's columns as an answer's statement joins them (question-memory-repository.ts).
  "m_due_at",
  "m_last_answered_at",
]);
const ID_COLUMNS = new Set(["id", "quiz_id", "question_id", "study_guide_id", "answer_id"]);

type BetterSqlite = new (filename: string) => SqliteDatabase & { pragma(source: string): unknown };

/** Loads better-sqlite3, with a clear error when it is missing or does not load. */
function loadBetterSqlite(): BetterSqlite {
  try {
    return createRequire(import.meta.url)("better-sqlite3") as BetterSqlite;
  } catch (err) {
    throw new Error(
      "DATABASE_URL asks for SQLite, but better-sqlite3 is not installed or does not load " +
        "(it needs Node 22 or later). Run `npm install`, or set DATABASE_URL=mysql://...",
      { cause: err },
    );
  }
}

/**
 * Opens a SQLite file (or ":memory:") as a Kysely database whose statements
 * wait out another process's lock for up to `lockWaitMs`.
 */
export function openSqlite(filename: string, lockWaitMs: number): Kysely<Database> {
  const BetterSqlite3 = loadBetterSqlite();
  const raw = new BetterSqlite3(filename);
  raw.pragma("foreign_keys = ON");
  // Never wait inside the synchronous driver (see above).
  raw.pragma("busy_timeout = 0");
  if (filename !== ":memory:") {
    raw.pragma("journal_mode = WAL");
    raw.pragma("synchronous = NORMAL");
  }
  return new Kysely<Database>({
    dialect: new LockWaitingDialect({ database: withConversions(raw) }, lockWaitMs),
    plugins: [new DropRowLocks()],
  });
}

/** SQLite whose statements wait out another process's lock asynchronously (see above). */
class LockWaitingDialect extends SqliteDialect {
  constructor(
    config: ConstructorParameters<typeof SqliteDialect>[0],
    readonly lockWaitMs: number,
  ) {
    super(config);
  }

  override createDriver(): Driver {
    return wrapConnections(super.createDriver(), (connection) => ({
      executeQuery: <R>(query: CompiledQuery) => {
        // The driver is synchronous: a stopped call stops between statements, and in a lock wait.
        const signal = signalOf(query);
        if (signal?.aborted && !endsTransaction(query.sql)) return Promise.reject(signal.reason);
        const statement = () => connection.executeQuery<R>(query);
        const stops = endsTransaction(query.sql) ? undefined : signal;
        return traced(query.sql, () => waitOutLocks(statement, this.lockWaitMs, stops));
      },
      streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
    }));
  }
}

/**
 * A CLIENT span for a statement run under a sampled call, as the mysql2
 * instrumentation makes for MySQL (ops/tracing.ts; the sampler adds
 * `db.operation.name`). Kysely's text has placeholders: no bound value.
 */
function traced<T>(sql: string, run: () => Promise<T>): Promise<T> {
  if (trace.getActiveSpan()?.isRecording() !== true) return run();
  const verb = sql.trimStart().split(/\s/, 1)[0]?.toUpperCase() || "SQL";
  const attributes = { "db.system.name": "sqlite", "db.query.text": sql };
  return tracer.startActiveSpan(verb, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      return await run();
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      span.setAttribute("error.type", typeof code === "string" ? code : "error");
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `statement`, again after a growing pause while SQLite answers
 * SQLITE_BUSY, up to `lockWaitMs`; a call's `signal` ends the wait at once with
 * its reason (its deadline, or its client gone).
 */
async function waitOutLocks<T>(
  statement: () => Promise<T>,
  lockWaitMs: number,
  signal: AbortSignal | undefined,
): Promise<T> {
  const started = performance.now();
  for (let n = 0; ; n++) {
    try {
      return await statement();
    } catch (err) {
      if ((err as { code?: unknown }).code !== "SQLITE_BUSY") throw err;
      if (performance.now() - started >= lockWaitMs) throw err;
      const pause = LOCK_BACKOFF_MS[Math.min(n, LOCK_BACKOFF_MS.length - 1)] as number;
      await sleep(pause, signal);
    }
  }
}

function withConversions(raw: SqliteDatabase): SqliteDatabase {
  return {
    close: () => raw.close(),
    prepare(sql) {
      const statement = raw.prepare(sql);
      return {
        reader: statement.reader,
        all: (params) => statement.all(params.map(toSqlite)).map(fromSqlite),
        run: (params) => statement.run(params.map(toSqlite)),
        *iterate(params) {
          for (const row of statement.iterate(params.map(toSqlite))) yield fromSqlite(row);
        },
      };
    },
  };
}

function toSqlite(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === "boolean") return value ? 1 : 0;
  return value;
}

function fromSqlite(row: unknown): unknown {
  const record = row as Record<string, unknown>;
  for (const key in record) {
    const value = record[key];
    if (typeof value === "string" && TIME_COLUMNS.has(key)) record[key] = new Date(value);
    else if ((typeof value === "number" || typeof value === "bigint") && ID_COLUMNS.has(key)) {
      record[key] = String(value);
    }
  }
  return record;
}

/** Removes `FOR UPDATE` and the other row-locking clauses, which SQLite does not parse (see above). */
class DropRowLocks implements KyselyPlugin {
  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    if (!SelectQueryNode.is(node) || !node.endModifiers?.length) return node;
    return { ...node, endModifiers: [] } as SelectQueryNode;
  }

  async transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return result;
  }
}
