import {
  type CompiledQuery,
  type ConnectionProvider,
  createQueryId,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  Kysely,
  type KyselyConfig,
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
 * For a database opened by `openKysely`, its wait for a connection stops too.
 */
export function withSignal<DB>(db: Kysely<DB>, signal: AbortSignal | undefined): Kysely<DB> {
  if (signal === undefined) return db;
  const call = signal as SignalWithDatabases;
  call[DATABASES] ??= new Map();
  const ofCall = call[DATABASES];
  let stopped = ofCall.get(db);
  if (stopped === undefined) {
    stopped = callDatabase(db, signal);
    ofCall.set(db, stopped);
  }
  return stopped as Kysely<DB>;
}

/** What a call's Kysely shares with its database's, all but the executor (see `openKysely`). */
type Shared = { config: KyselyConfig; dialect: Dialect; driver: Driver };

/** The databases `openKysely` opened; each lives as long as the service. */
const opened = new WeakMap<object, Shared>();

/**
 * A Kysely on `config`, whose calls' Kyselys (`withSignal`) share its driver
 * and connections, each with a connection provider of its own that stops
 * waiting when the call stops (`CallConnections`).
 */
export function openKysely<DB>(config: KyselyConfig): Kysely<DB> {
  const { dialect } = config;
  let driver: Driver | undefined;
  const recording: Dialect = {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => {
      driver = dialect.createDriver();
      return driver;
    },
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
  };
  const db = new Kysely<DB>({ ...config, dialect: recording });
  if (driver === undefined) throw new Error("Kysely did not create its driver");
  opened.set(db, { config, dialect: recording, driver });
  return db;
}

function callDatabase<DB>(db: Kysely<DB>, signal: AbortSignal): Kysely<DB> {
  const shared = opened.get(db);
  if (shared === undefined) return db.withPlugin(new CallSignal(signal));
  const executor = db.getExecutor();
  // The driver only begins, commits and rolls back the call's transactions:
  // connections come from the database's own provider, through the call's.
  return new Kysely<DB>({
    ...shared,
    executor: executor
      .withConnectionProvider(new CallConnections(executor, signal))
      .withPlugin(new CallSignal(signal)),
  });
}

/**
 * A call's connections: its wait for one (the pool's all busy, SQLite's in
 * another transaction, a new one being readied) ends when the call stops, and
 * the connection, once it comes, goes back unused.
 */
class CallConnections implements ConnectionProvider {
  constructor(
    private readonly connections: ConnectionProvider,
    private readonly signal: AbortSignal,
  ) {}

  provideConnection<T>(consumer: (connection: DatabaseConnection) => Promise<T>): Promise<T> {
    const { signal } = this;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      const stop = () => reject(signal.reason);
      signal.addEventListener("abort", stop, { once: true });
      this.connections
        .provideConnection((connection) => {
          signal.removeEventListener("abort", stop);
          return signal.aborted ? Promise.reject(signal.reason) : consumer(connection);
        })
        .then(resolve, (err: unknown) => {
          signal.removeEventListener("abort", stop);
          reject(err);
        });
    });
  }
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
