import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { createSecureContext } from "node:tls";
import { type Logger, pino } from "pino";
import { ConfigError } from "../config.js";
import { describeStore, storeOf, unusableSessionIn } from "../db/connect.js";

/**
 * Start-up failures as one line a person can act on: which setting, what is
 * wrong, what to do. The service and the scripts print that line and exit 1,
 * never a stack: the usual causes are a setting or the machine, not a bug.
 */

/** A failure already put in one line naming the setting. */
export class StartupError extends Error {
  override name = "StartupError";
}

interface CodedError {
  code?: string;
  errno?: number;
  sqlMessage?: string;
  message?: string;
  hostname?: string;
  path?: string;
}

/** The first error in `err`'s cause chain that carries a code (mysql2, Node, SQLite). */
function codedError(err: unknown): CodedError | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    const coded = current as CodedError & { cause?: unknown };
    if (typeof coded.code === "string") return coded;
    current = coded.cause;
  }
  return undefined;
}

/** A user name from a mysql:// URL, for messages (never the password). */
function userOf(url: string): string {
  return decodeURIComponent(new URL(url).username) || "(no user)";
}

/**
 * Whether a database failure at start-up may heal by waiting: the server is
 * not up yet (refused, reset, timed out, still starting), or a name lookup
 * failed for now. A refused login, an unknown host or a missing right is final.
 */
export function databaseMayHeal(err: unknown): boolean {
  const { code, errno } = codedError(err) ?? {};
  return (
    code === "ECONNREFUSED" ||
    code === "ECONNRESET" ||
    code === "ETIMEDOUT" ||
    code === "EAI_AGAIN" ||
    code === "PROTOCOL_CONNECTION_LOST" ||
    code === "SQLITE_BUSY" ||
    // Too many connections, a server shutting down or a Galera node still joining.
    errno === 1040 ||
    errno === 1053 ||
    errno === 1047
  );
}

/**
 * One line for a database failure at start-up, or undefined when the error
 * is not one of the usual causes. `url` is the DATABASE_URL (or, with
 * `setting`, another variable naming a database).
 */
export function databaseFailure(
  err: unknown,
  url: string,
  setting = "DATABASE_URL",
): string | undefined {
  // A server whose sessions the service cannot make exact (sql_mode, character set).
  const unusable = unusableSessionIn(err);
  if (unusable !== undefined) return `the database ${describeStore(url)} ${unusable.reason}`;
  const coded = codedError(err);
  if (coded === undefined) return undefined;
  const store = describeStore(url);
  const { code, errno, sqlMessage } = coded;
  if (storeOf(url) === "sqlite") {
    // A folder of its own, not made (a mistyped path would make one).
    if (code === "ENOENT") {
      return `cannot open the database ${store}: the folder ${coded.path ?? "of its path"} does not exist (create it, or fix ${setting})`;
    }
    // Its folder cannot be made: a file stands where a folder of the path should be.
    if (code === "EEXIST") {
      return `cannot create the database ${store}: ${coded.path ?? "a folder of its path"} is a file, not a folder (set ${setting} to a path under a folder)`;
    }
    const unwritable = ["SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM", "EACCES", "EROFS"];
    if (code !== undefined && (unwritable.includes(code) || code === "ENOTDIR")) {
      return `cannot write the database ${store}: ${coded.message} (make its folder writable, or set ${setting})`;
    }
    return undefined;
  }
  const host = new URL(url).host;
  const user = userOf(url);
  const database = new URL(url).pathname.slice(1);
  switch (code) {
    case "ECONNREFUSED":
      return `cannot reach the database ${store}: connection refused (start MySQL/MariaDB there, or set ${setting})`;
    case "ETIMEDOUT":
      return `cannot reach the database ${store}: no answer (check the host and the firewall, or set ${setting})`;
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `cannot reach the database ${store}: unknown host ${new URL(url).hostname} (fix the host in ${setting})`;
    case "ER_ACCESS_DENIED_ERROR":
    case "ER_ACCESS_DENIED_NO_PASSWORD_ERROR":
      return `the database ${store} refused the login of user '${user}' (fix the user or password in ${setting})`;
    case "ER_DBACCESS_DENIED_ERROR":
      return `user '${user}' may not use or create database '${database}' on ${host} (create it and GRANT ALL ON \`${database}\`.* TO '${user}', or set ${setting})`;
    case "ER_TABLEACCESS_DENIED_ERROR":
    case "ER_COLUMNACCESS_DENIED_ERROR":
    case "ER_SPECIFIC_ACCESS_DENIED_ERROR":
      return `user '${user}' may not change the schema of '${database}' on ${host} (GRANT ALL ON \`${database}\`.* TO '${user}', or run \`npm run migrate\` as a user who may and set MIGRATE_ON_START=false): ${sqlMessage ?? coded.message}`;
    default:
      if (errno === 1040) {
        return `the database ${store} has too many connections (raise max_connections, or lower DB_POOL_SIZE)`;
      }
      return undefined;
  }
}

/** One line for a port that cannot be listened on, for the usual causes; else undefined. */
export function listenFailure(
  err: unknown,
  host: string,
  port: number,
  setting: "PORT" | "METRICS_PORT" | "RELAY_METRICS_PORT",
): string | undefined {
  const at = `cannot listen on ${host}:${port} (${setting})`;
  switch ((err as NodeJS.ErrnoException).code) {
    case "EADDRINUSE":
      return `${at}: the port is already in use (stop the other process, or set ${setting} to a free port)`;
    case "EACCES":
      return `${at}: permission denied (use a port above 1023, or set ${setting})`;
    case "EADDRNOTAVAIL":
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `${at}: ${host} is not an address of this machine (set HOST)`;
    default:
      return undefined;
  }
}

/**
 * Fails at once, in `listenFailure`'s words, when a port the service is to
 * listen on is taken: before the database is created or migrated for a
 * service that cannot run. (One taken between this check and the listen is
 * refused there, in the same words.)
 */
export async function checkPortsFree(
  host: string,
  ports: [setting: Parameters<typeof listenFailure>[3], port: number][],
): Promise<void> {
  for (const [setting, port] of ports) {
    if (port === 0) continue;
    const probe = createServer();
    try {
      await new Promise<void>((resolve, reject) => {
        probe.once("error", reject);
        probe.listen(port, host, resolve);
      });
    } catch (err) {
      const line = listenFailure(err, host, port, setting);
      throw line === undefined ? err : new StartupError(line);
    } finally {
      await new Promise((resolve) => probe.close(resolve));
    }
  }
}

/** Reads the TLS files and checks they are a PEM certificate and its key, or throws a StartupError. */
export function checkTlsFiles(tls: { certFile: string; keyFile: string }): void {
  const read = (file: string, setting: string) => {
    try {
      return readFileSync(file);
    } catch (err) {
      const reason =
        (err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : "cannot read it";
      throw new StartupError(`${setting}: ${file}: ${reason} (set ${setting} to a PEM file)`);
    }
  };
  const cert = read(tls.certFile, "TLS_CERT_FILE");
  const key = read(tls.keyFile, "TLS_KEY_FILE");
  try {
    createSecureContext({ cert, key });
  } catch (err) {
    throw new StartupError(
      `TLS_CERT_FILE and TLS_KEY_FILE are not a PEM certificate and its private key (${(err as Error).message})`,
    );
  }
}

/**
 * The one line to print for a failure that ends a start (of the service or
 * a script). Unexpected errors keep their message; `debug` adds the stack.
 */
export function startupLine(err: unknown, databaseUrl?: string): string {
  if (err instanceof ConfigError) return `configuration error: ${err.message}`;
  if (err instanceof StartupError) return err.message;
  if (databaseUrl !== undefined) {
    const line = databaseFailure(err, databaseUrl);
    if (line !== undefined) return line;
  }
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
  return `cannot start: ${message}${cause} (LOG_LEVEL=debug prints the stack)`;
}

/**
 * Runs an entry point's `main`: a failure prints one line on stderr and
 * exits 1. `databaseUrl()` names the database for its messages, once known.
 */
export function runEntry(
  main: () => Promise<void>,
  context: {
    databaseUrl?: () => string | undefined;
    debug?: () => boolean;
    /** Writes out what the entry's logger still holds: the failure's line comes last. */
    flush?: () => void;
  } = {},
): void {
  main().catch((err: unknown) => {
    context.flush?.();
    console.error(startupLine(err, context.databaseUrl?.()));
    if (context.debug?.() && !(err instanceof ConfigError || err instanceof StartupError)) {
      console.error(err);
    }
    process.exit(1);
  });
}

/**
 * Writes out what a pino logger still buffers, now: pino's stream writes
 * asynchronously, so its last lines would otherwise follow a line printed
 * with console.error. A stream not open yet holds nothing.
 */
export function flushLogSync(logger: Logger): void {
  const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    | { flushSync?: () => void }
    | undefined;
  try {
    stream?.flushSync?.();
  } catch {
    // Not open yet: nothing written, nothing to flush.
  }
}
