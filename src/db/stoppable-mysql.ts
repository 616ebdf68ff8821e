import {
  type CompiledQuery,
  type Driver,
  MysqlDialect,
  type MysqlPoolConnection,
  type QueryResult,
} from "kysely";
import type { Pool, PoolConnection } from "mysql2";
import { endsTransaction, signalOf } from "./cancel.js";
import { inlineValues } from "./inline-values.js";
import type { StatementKiller, StopOutcome } from "./kill-statement.js";
import { prepareSession, type ServerSession, type SessionLimits } from "./mysql-session.js";
import { isSeveral, marked, nextMarker } from "./statement-marker.js";
import { wrapConnections } from "./wrap-connections.js";

export interface StoppableOptions {
  /** The statements' and sessions' limits (edge/call-limits.ts). */
  limits: SessionLimits;
  /** A new connection's whole set-up (DB_CONNECT_TIMEOUT_MS, as for opening it). */
  setupMs: number;
  killer: StatementKiller;
  /** Told of each new connection's server, once it is ready. */
  onSession?: (session: ServerSession) => void;
}

/**
 * Kysely's MySQL dialect on `pool`: new connections readied first (mysql-session.ts), values
 * written as literals no sql_mode misreads, statements stopped with their call (docs/decisions.md).
 */
export class StoppableMysqlDialect extends MysqlDialect {
  constructor(pool: Pool, options: StoppableOptions) {
    const adapters = new WeakMap<PoolConnection, MysqlPoolConnection>();
    const ready = (connection: PoolConnection, callback: (err: unknown, c?: never) => void) => {
      prepareSession(connection, options.setupMs, options.limits).then(
        (session) => {
          options.onSession?.(session);
          const adapter = stoppableConnection(connection, session, options);
          adapters.set(connection, adapter);
          callback(null, adapter as never);
        },
        (err: unknown) => {
          connection.destroy();
          // Fatal: the call is answered `unavailable`, the reason kept for the log.
          const message = err instanceof Error ? err.message : String(err);
          callback(
            Object.assign(new Error(`database session not ready: ${message}`, { cause: err }), {
              fatal: true,
            }),
          );
        },
      );
    };
    super({
      pool: {
        getConnection: (callback) =>
          pool.getConnection((err, connection) => {
            if (err) return callback(err, connection);
            const adapter = adapters.get(connection);
            if (adapter !== undefined) return callback(null, adapter as never);
            ready(connection, callback as never);
          }),
        end: (callback) => pool.end(callback),
      },
    });
  }

  override createDriver(): Driver {
    return wrapConnections(super.createDriver(), (connection) => ({
      executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
        sending = signalOf(query);
        sendingSeveral = isSeveral(query);
        try {
          return connection.executeQuery<R>(query);
        } finally {
          sending = undefined;
          sendingSeveral = false;
        }
      },
      streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
    }));
  }
}

/** How long a stopped statement may go on after a look for it before another. */
const KILL_AGAIN_MS = 250;
/**
 * Looks in a row that do not see a stopped statement before its connection is closed instead:
 * it is not on its server yet, or it runs on a server alike that no KILL connection reaches.
 */
const MAX_UNSEEN = 4;

/** The signal of the statement being sent: Kysely hands a statement to its connection synchronously. */
let sending: AbortSignal | undefined;
/** Whether it is several statements in one request (statement-marker.ts). */
let sendingSeveral = false;

/**
 * `connection` as Kysely uses it. A stopped call's statement is found on its own server and
 * KILLed there (kill-statement.ts), and is answered once it has returned; past `queryTimeoutMs`,
 * or when no KILL can reach it, the connection is destroyed (and the statement KILLed where
 * one can reach it).
 */
function stoppableConnection(
  connection: PoolConnection,
  session: ServerSession,
  { limits, killer }: StoppableOptions,
): MysqlPoolConnection {
  const timeoutMs = limits.queryTimeoutMs;
  const threadId = connection.threadId;
  // Once destroyed here, mysql2 never answers the commands queued on the
  // connection (its rollback, say): they fail at once instead.
  let destroyed: unknown;
  const query = (sql: string, parameters: unknown[], callback?: QueryCallback) => {
    const signal = sending;
    const several = sendingSeveral;
    sending = undefined;
    sendingSeveral = false;
    const marker = nextMarker();
    if (callback === undefined) return send(connection, marker, sql, parameters, several);
    if (destroyed !== undefined) {
      process.nextTick(callback, destroyed);
      return undefined;
    }
    const stoppable = signal !== undefined && !endsTransaction(sql);
    if (stoppable && signal.aborted) {
      process.nextTick(callback, signal.reason);
      return undefined;
    }
    let settled = false;
    const settle = () => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      clearTimeout(again);
      if (stoppable) signal.removeEventListener("abort", onAbort);
      return true;
    };
    const cutOff = (err: unknown) => {
      if (!settle()) return;
      destroyed = Object.assign(new Error("the connection was closed: its statement was stopped"), {
        code: "PROTOCOL_CONNECTION_LOST",
        fatal: true,
      });
      connection.destroy();
      stopStatement(killer, session, threadId, marker, true).catch(() => {});
      callback(err, undefined as never);
    };
    // Stopped: answered with the signal's reason once the statement has
    // returned (`returned`) and no KILL is on its way (`killing`), so none
    // can reach the connection's next statement.
    let returned = false;
    let killing = false;
    let unseen = 0;
    let again: NodeJS.Timeout | undefined;
    const stopped = () => {
      if (returned && !killing && settle()) callback(signal?.reason, undefined as never);
    };
    const onAbort = () => {
      killing = true;
      stopStatement(killer, session, threadId, marker, unseen > 0).then(
        (outcome) => {
          killing = false;
          if (returned) return stopped();
          if (outcome === "unreachable") return cutOff(signal?.reason);
          unseen = outcome === "stopped" ? 0 : unseen + 1;
          if (unseen >= MAX_UNSEEN) return cutOff(signal?.reason);
          // Not on its server yet, or KILLed and still ending: look again
          // until it has returned.
          if (!settled) again = setTimeout(onAbort, KILL_AGAIN_MS);
        },
        () => cutOff(signal?.reason),
      );
    };
    const timer = setTimeout(() => {
      cutOff(
        Object.assign(new Error(`query timed out after ${timeoutMs} ms`), {
          code: "PROTOCOL_SEQUENCE_TIMEOUT",
          fatal: true,
        }),
      );
    }, timeoutMs);
    if (stoppable) signal.addEventListener("abort", onAbort, { once: true });
    try {
      send(connection, marker, sql, parameters, several, (err, result) => {
        if (stoppable && signal.aborted) {
          returned = true;
          return stopped();
        }
        if (settle()) callback(err, result as never);
      });
    } catch (err) {
      // A value with no safe literal (undefined, NaN, an object): refused before sending.
      if (settle()) process.nextTick(callback, err);
    }
    return undefined;
  };
  return { query: query as MysqlPoolConnection["query"], release: () => connection.release() };
}

type QueryCallback = Parameters<MysqlPoolConnection["query"]>[2];

/** The statement `marker` ends, on `session`'s thread, stopped where a KILL connection finds it. */
function stopStatement(
  killer: StatementKiller,
  session: ServerSession,
  threadId: number | null | undefined,
  marker: string,
  lookFurther: boolean,
): Promise<StopOutcome> {
  return session.killable && typeof threadId === "number"
    ? killer.stop({ server: session.server, threadId, marker, lookFurther })
    : Promise.resolve("unreachable");
}

/**
 * A statement as text, its values as literals no sql_mode reads differently, marked for its
 * KILLs (statement-marker.ts), in one round trip.
 */
function send(
  connection: PoolConnection,
  marker: string,
  sql: string,
  parameters: readonly unknown[],
  several: boolean,
  callback?: (err: unknown, result: unknown) => void,
) {
  return connection.query(
    marked(marker, inlineValues(sql, parameters), several),
    callback as never,
  );
}
