import { escape as escapeValue, format } from "mysql2";

/**
 * mysql2's own formatting of a statement's `?` placeholders (its `format`
 * and `escape`), with where each statement text holds them found once and
 * kept: otherwise a page's statement, some 700 characters, is scanned for
 * them (quotes, comments) on every call. Given to mysql2 as its
 * `queryFormat`; a statement with a value other than a string, number,
 * bigint, boolean or null, and a text not split as expected, go through
 * `format` as they are (query-format.test.ts: the same text either way).
 */
export function queryFormat(
  this: { config: { stringifyObjects?: boolean; timezone?: string } },
  sql: string,
  values: unknown,
): string {
  const { stringifyObjects, timezone } = this.config;
  if (Array.isArray(values) && values.length === 0) return sql;
  if (!Array.isArray(values) || !values.every(isPlain))
    return format(sql, values as never, stringifyObjects, timezone as never);
  const parts = partsOf(sql, values.length);
  if (parts === undefined) return format(sql, values, stringifyObjects, timezone as never);
  let out = parts[0] ?? "";
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    out +=
      typeof value === "number" || typeof value === "bigint"
        ? `${value}`
        : escapeValue(value, stringifyObjects, timezone as never);
    out += parts[i + 1];
  }
  return out;
}

const isPlain = (v: unknown) =>
  v === null ||
  typeof v === "string" ||
  typeof v === "number" ||
  typeof v === "bigint" ||
  typeof v === "boolean";

/** Statement texts split at their placeholders (null: not splittable), for the texts' count of values. */
const split = new Map<string, (string[] | null)[]>();
/** Texts built with their values inline would each be kept: past this many, no more are. */
const MAX_TEXTS = 1000;

/** Where `format` puts the values: a marker no statement holds, in quotes, for each. */
const MARK = "\u0001";
const MARKED = new RegExp(`'${MARK}(\\d+)${MARK}'`, "g");

function partsOf(sql: string, count: number): string[] | undefined {
  const known = split.get(sql)?.[count];
  if (known !== undefined) return known ?? undefined;
  let parts: string[] | null = null;
  if (!sql.includes(MARK)) {
    const markers = Array.from({ length: count }, (_, i) => `${MARK}${i}${MARK}`);
    const pieces = format(sql, markers).split(MARKED);
    // Pieces alternate text, marker index: every value placed once, in order.
    const inOrder = pieces.every((p, i) => i % 2 === 0 || p === String((i - 1) / 2));
    if (pieces.length === 2 * count + 1 && inOrder) parts = pieces.filter((_, i) => i % 2 === 0);
  }
  if (split.size < MAX_TEXTS || split.has(sql)) {
    const byCount = split.get(sql) ?? [];
    byCount[count] = parts;
    split.set(sql, byCount);
  }
  return parts ?? undefined;
}
