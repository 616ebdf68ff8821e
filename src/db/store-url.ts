import { resolve } from "node:path";

/** Which database a DATABASE_URL names: `mysql://…` or `sqlite:PATH` / `sqlite::memory:`. */
export type Store = "mysql" | "sqlite";

export function storeOf(url: string): Store {
  return url.startsWith("sqlite:") ? "sqlite" : "mysql";
}

/**
 * The store a URL names, for people: `SQLite /abs/path/practice.db` or
 * `MySQL host:port/db`, never the password.
 */
export function describeStore(url: string): string {
  if (storeOf(url) === "sqlite") {
    const file = sqliteFile(url);
    return `SQLite ${file === ":memory:" ? file : resolve(file)}`;
  }
  const parsed = new URL(url);
  return `MySQL ${parsed.host}${parsed.pathname}`;
}

/** The file of a `sqlite:` URL, or ":memory:". */
export function sqliteFile(url: string): string {
  return url.slice("sqlite:".length);
}

/** The database name in a mysql:// URL: only letters, digits and underscores, so it may be quoted in DDL. */
export function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.slice(1));
  if (!/^[A-Za-z0-9_]{1,64}$/.test(name)) {
    throw new Error(`database name "${name}" must be 1-64 letters, digits or underscores`);
  }
  return name;
}
