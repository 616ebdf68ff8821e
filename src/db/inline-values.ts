import { format } from "mysql2";

/**
 * A statement's text with its `?` placeholders replaced by literals that
 * every `sql_mode` reads the same way: a string as `_utf8mb4 X'…'` (hex
 * digits only, so no quote, backslash, comment or `;` inside can end it), or
 * as `_utf8mb4'…'` when it is printable ASCII without a quote or backslash:
 * both utf8mb4 with its default collation, whatever the connection's, so any
 * two compare; numbers as digits, a time as `'YYYY-MM-DD HH:MM:SS.mmm'` in
 * UTC. How every value reaches MySQL/MariaDB (stoppable-mysql.ts); throws on
 * a value it cannot write that way.
 */
export function inlineValues(sql: string, values: readonly unknown[]): string {
  if (values.length === 0) return sql;
  const parts = partsOf(sql, values.length);
  let out = parts[0] ?? "";
  for (let i = 0; i < values.length; i++) out += literal(values[i]) + parts[i + 1];
  return out;
}

/**
 * Text that is a literal as it stands, quoted: printable ASCII but `'` and `\`. Not the empty
 * string: EMPTY_STRING_IS_NULL reads `''` and `_utf8mb4''` as NULL, `_utf8mb4 X''` as empty.
 */
const PLAIN_TEXT = /^[\x20-\x26\x28-\x5b\x5d-\x7e]+$/;

function literal(value: unknown): string {
  if (value === null) return "NULL";
  if (typeof value === "boolean") return value ? "1" : "0";
  // A negative number in parentheses: `a -?` must not read `a --1`.
  if (typeof value === "bigint") return value < 0n ? `(${value})` : `${value}`;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`no SQL literal for ${value}`);
    return value < 0 ? `(${value})` : `${value}`;
  }
  if (typeof value === "string") {
    // Printable ASCII without a quote or backslash reads the same in every sql_mode as it is.
    if (PLAIN_TEXT.test(value)) return `_utf8mb4'${value}'`;
    return `_utf8mb4 X'${Buffer.from(value, "utf8").toString("hex")}'`;
  }
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new TypeError("no SQL literal for an invalid date");
    return `'${value.toISOString().slice(0, 23).replace("T", " ")}'`;
  }
  throw new TypeError(`no SQL literal for a value of type ${typeof value}`);
}

/**
 * Statement texts split at their placeholders, found once per text and
 * count of values by mysql2's own parsing of quotes and comments: a page's
 * statement, some 700 characters, is not scanned again on every call.
 */
const split = new Map<string, string[][]>();
/** Texts kept at most (the service has a few dozen). */
const MAX_TEXTS = 1000;

/** Where `format` puts the values: a marker no statement holds, in quotes, for each. */
const MARK = "\u0001";
const MARKED = new RegExp(`'${MARK}(\\d+)${MARK}'`, "g");

function partsOf(sql: string, count: number): string[] {
  const known = split.get(sql)?.[count];
  if (known !== undefined) return known;
  if (sql.includes(MARK)) throw new Error("a statement's text holds U+0001");
  const markers = Array.from({ length: count }, (_, i) => `${MARK}${i}${MARK}`);
  const pieces = format(sql, markers).split(MARKED);
  // Pieces alternate text, marker index: every value placed once, in order.
  const inOrder = pieces.every((p, i) => i % 2 === 0 || p === String((i - 1) / 2));
  if (pieces.length !== 2 * count + 1 || !inOrder) {
    throw new Error(`a statement's placeholders do not match its ${count} values`);
  }
  const parts = pieces.filter((_, i) => i % 2 === 0);
  if (split.size < MAX_TEXTS || split.has(sql)) {
    const byCount = split.get(sql) ?? [];
    byCount[count] = parts;
    split.set(sql, byCount);
  }
  return parts;
}
