import {
  type CompiledQuery,
  createQueryId,
  type Kysely,
  type KyselyPlugin,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  RawNode,
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
 *
 * The mark is a property of the statement's root node, and a call's signalled databases hang on
 * its signal: plain references, no WeakMap (docs/decisions.md says why).
 */
const CALL_SIGNAL = Symbol("call signal");

type Marked = RootOperationNode & { readonly [CALL_SIGNAL]?: AbortSignal };

class CallSignal implements KyselyPlugin {
  constructor(readonly signal: AbortSignal) {}

  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    return marked(node, this.signal);
  }

  transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return Promise.resolve(result);
  }
}

function marked(node: RootOperationNode, signal: AbortSignal): RootOperationNode {
  return Object.freeze({ ...node, [CALL_SIGNAL]: signal });
}

const DATABASES = Symbol("signalled databases");

type SignalWithDatabases = AbortSignal & { [DATABASES]?: Map<object, object> };

/**
 * `db` whose statements are stopped when `signal` aborts (none: `db` itself),
 * one per database and call: a use case's writes and its routed reads share it.
 */
export function withSignal<DB>(db: Kysely<DB>, signal: AbortSignal | undefined): Kysely<DB> {
  return signal === undefined ? db : forCall(db, signal);
}

function forCall<DB>(db: Kysely<DB>, signal: AbortSignal, plugin?: CallSignal): Kysely<DB> {
  const call = signal as SignalWithDatabases;
  call[DATABASES] ??= new Map();
  const ofCall = call[DATABASES];
  let stopped = ofCall.get(db);
  if (stopped === undefined) {
    stopped = db.withPlugin(plugin ?? new CallSignal(signal));
    ofCall.set(db, stopped);
  }
  return stopped as Kysely<DB>;
}

/**
 * `target` for the call `db` runs for: with `db`'s plugins, its call's signal among them, so
 * that statements of that call on another database stop with it (a test's own plugins
 * see them too). Only the call's signal: the call's own copy, made once (withSignal).
 */
export function forCallOf<DB>(target: Kysely<DB>, db: Kysely<DB>): Kysely<DB> {
  const plugins = db.getExecutor().plugins;
  const [only] = plugins;
  if (plugins.length === 1 && only instanceof CallSignal) return forCall(target, only.signal, only);
  return plugins.reduce((out, plugin) => out.withPlugin(plugin), target);
}

/** The signal of the call `query` runs for, if any. */
export function signalOf(query: CompiledQuery): AbortSignal | undefined {
  return (query.query as Marked)[CALL_SIGNAL];
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
  let query: RootOperationNode = RawNode.createWithSql(sql);
  for (const plugin of db.getExecutor().plugins)
    if (plugin instanceof CallSignal) query = marked(query, plugin.signal);
  return Object.freeze({
    sql,
    query,
    parameters: Object.freeze(parameters),
    queryId: createQueryId(),
  });
}

/**
 * Whether a statement must run even for a call that has been stopped: the
 * end of its transaction, so that the connection goes back clean.
 */
export function endsTransaction(sql: string): boolean {
  return /^\s*rollback\b/i.test(sql);
}
