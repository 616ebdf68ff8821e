import { type DescEnum, type DescField, ScalarType } from "@bufbuild/protobuf";
import { fieldSentence } from "../contract/violation-messages.js";

/**
 * How the REST gateway writes a request field: a string as it is; an int32 as decimal digits
 * in a query string, or a JSON integer in a body; an enum as the lower-case name of one of its
 * values but the zero one (`SESSION_STATUS_ACTIVE`: "active"), which a REST call says by
 * leaving the field out.
 */

const INT32_MAX = 2 ** 31 - 1;

/** The REST words of an enum, each with its value. */
export function restWordsOf(desc: DescEnum): Map<string, number> {
  let words = wordsCache.get(desc);
  if (words === undefined) {
    words = new Map(
      desc.values.filter((v) => v.number !== 0).map((v) => [v.localName.toLowerCase(), v.number]),
    );
    wordsCache.set(desc, words);
  }
  return words;
}
const wordsCache = new WeakMap<DescEnum, Map<string, number>>();

/** `"a" or "b"`, `"a", "b" or "c"`. */
function wordList(words: Iterable<string>): string {
  const quoted = [...words].map((w) => `"${w}"`);
  return quoted.length < 2
    ? quoted.join("")
    : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
}

/**
 * `raw`, a REST value of `field` (a query parameter's text or a body's JSON value), as the
 * field's value; or why it cannot be (the rule it breaks, the message).
 */
export function restField(
  field: DescField,
  raw: unknown,
  from: "query" | "body",
): { value: unknown } | { rule: string; message: string } {
  if (field.fieldKind === "enum") {
    const words = restWordsOf(field.enum);
    const value = typeof raw === "string" ? words.get(raw) : undefined;
    if (value !== undefined) return { value };
    return {
      rule: "enum.defined_only",
      message: `${field.name} must be ${wordList(words.keys())}`,
    };
  }
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING) {
    if (typeof raw === "string") return { value: raw };
    return { rule: "rest.type", message: `${field.name} must be a string` };
  }
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.INT32) {
    const value =
      from === "query" && typeof raw === "string" && /^[0-9]+$/.test(raw) ? Number(raw) : raw;
    // 0 is "unset" in the request message: a REST call leaves the parameter out instead.
    if (typeof value === "number" && Number.isInteger(value) && value > 0 && value <= INT32_MAX) {
      return { value };
    }
    return {
      rule: "rest.type",
      message: fieldSentence(field) ?? `${field.name} must be a positive integer`,
    };
  }
  throw new Error(`${field}: no REST form for this kind of field`);
}
