import { format } from "mysql2";
import { describe, expect, it } from "vitest";
import { queryFormat } from "./query-format.js";

const connection = { config: { timezone: "Z" } };
const ours = (sql: string, values: unknown) => queryFormat.call(connection, sql, values);
const own = (sql: string, values: unknown) => format(sql, values as never, undefined, "Z");

const TEXTS = [
  "select `s`.`id` from `practice_sessions` as `s` where `user_id` = ? and `quiz_id` = ? limit ?",
  "select (`mode` = 'review') as `review`, ? as a from t where x = ? -- ? in a comment\n and y = ?",
  "select '?' as q, \"?\" as d, `?` as b, ? as v /* ? */ from t where c = ? # ?\n and e = ?",
  "insert into t (a, b) values (?, ?); insert into u (c) values (?)",
  "select ?? from t where a = ?",
  "select ? as a, ? as b",
  "select 1",
  "select ?, ?, ?, ?",
  "select '\u0001' as odd, ? as v, ? as w",
];

const VALUES: unknown[][] = [
  ["user-1", "42", 21],
  ["it's", 'say "hi"', "back\\slash\nnew line\u0000zero"],
  [null, true, false],
  [12n, -0, 1.5e300],
  [Number.NaN, Number.POSITIVE_INFINITY, "ünïcödé ✓"],
  [new Date(Date.UTC(2026, 10, 26, 16, 5, 7, 89)), "x", 1],
  [Buffer.from("ab"), [1, 2], { a: 1 }],
  ["only one"],
  ["a", "b", "c", "d", "e"],
  [undefined, "x", 2],
];

describe("queryFormat", () => {
  it("writes every statement as mysql2's own format does, the first time and once kept", () => {
    for (const sql of TEXTS) {
      for (const values of VALUES) {
        for (let time = 0; time < 2; time++) expect(ours(sql, values)).toBe(own(sql, values));
      }
      expect(ours(sql, undefined)).toBe(own(sql, undefined));
    }
  });
});
