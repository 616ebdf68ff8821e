import {
  CompiledQuery,
  type Kysely,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryId,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from "kysely";

/**
 * The signal of the call a statement runs for: a use case runs its database
 * work on `withSignal(db, signal)`, every statement compiled through it is
 * marked with the signal, and the drivers (connect.ts, sqlite.ts) stop it
 * when the signal aborts, as Go's database/sql does with a request's
 * context. Carried by the query, not by async context: a statement stops
 * with the call whose Kysely compiled it, whatever context its promise
 * runs in.
 */
const signals = new WeakMap<QueryId, AbortSignal>();

class CallSignal implements KyselyPlugin {
  constructor(readonly signal: AbortSignal) {}

  transformQuery({ node, queryId }: PluginTransformQueryArgs): RootOperationNode {
    signals.set(queryId, this.signal);
    return node;
  }

  transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(result);
  }
}

/**
 * `db` whose statements are stopped when `signal` aborts (none: `db` itself),
 * one per database and call: a use case's writes and its routed reads share it.
 */
export function withSignal<DB>(db: Kysely<DB>, signal: AbortSignal | undefined): Kysely<DB> {
  if (signal === undefined) return db;
  let ofCall = perCall.get(signal);
  if (ofCall === undefined) {
    ofCall = new WeakMap();
    perCall.set(signal, ofCall);
  }
  let stopped = ofCall.get(db);
  if (stopped === undefined) {
    stopped = db.withPlugin(new CallSignal(signal));
    ofCall.set(db, stopped);
  }
  return stopped as Kysely<DB>;
}

const perCall = new WeakMap<AbortSignal, WeakMap<object, object>>();

/** The signal of the call `query` runs for, if any. */
export function signalOf(query: CompiledQuery): AbortSignal | undefined {
  return signals.get(query.queryId);
}

/**
 * A statement built from text (a kept template, statements joined into one
 * request), stopped with the call `db` runs for, as a compiled one is.
 */
export function rawStatement<DB>(
  db: Kysely<DB>,
  sql: string,
  parameters: unknown[],
): CompiledQuery {
  const query = CompiledQuery.raw(sql, parameters);
  for (const plugin of db.getExecutor().plugins)
    if (plugin instanceof CallSignal) signals.set(query.queryId, plugin.signal);
  return query;
}

/**
 * Whether a statement must run even for a call that has been stopped: the
 * end of its transaction, so that the connection goes back clean.
 */
export function endsTransaction(sql: string): boolean {
  return /^\s*rollback\b/i.test(sql);
}
