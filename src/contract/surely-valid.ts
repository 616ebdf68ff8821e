import { type DescField, type DescMessage, hasOption, ScalarType } from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import {
  message as messageRulesOption,
  oneof as oneofRulesOption,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { RE2JS } from "@bufbuild/re2";
import { fieldRules } from "./field-rules.js";

/** One field's rules as a test of its value: true when the value surely keeps them. */
type Keeps = (value: unknown) => boolean;

/** A request type's rules, one test per field with rules; null: not compiled (see below). */
const compiled = new WeakMap<DescMessage, readonly [string, Keeps][] | null>();

/**
 * Whether `message` surely passes protovalidate's rules for `schema`, tested
 * directly on its values: protovalidate's reflective walk is most of what a
 * valid request's check costs, and most requests are valid. false is "not
 * sure": protovalidate decides, and names the violations. Compiled only for
 * types whose every rule is one of fieldRules' terms on a scalar or enum
 * field of implicit presence (patterns by RE2, protovalidate's own engine);
 * any other type is never sure. test: surely-valid.test.ts, against
 * protovalidate on every request type.
 */
export function surelyValid(schema: DescMessage, message: object): boolean {
  let tests = compiled.get(schema);
  if (tests === undefined) {
    tests = compile(schema);
    compiled.set(schema, tests);
  }
  if (tests === null) return false;
  const values = message as Record<string, unknown>;
  for (const [name, keeps] of tests) if (!keeps(values[name])) return false;
  return true;
}

/** Whether `schema`'s rules compile (see surelyValid): a test per field with rules. */
export function compiles(schema: DescMessage): boolean {
  surelyValid(schema, {});
  return compiled.get(schema) !== null;
}

function compile(schema: DescMessage): [string, Keeps][] | null {
  if (hasOption(schema, messageRulesOption)) return null;
  if (schema.oneofs.some((o) => hasOption(o, oneofRulesOption))) return null;
  const tests: [string, Keeps][] = [];
  for (const field of schema.fields) {
    const keeps = fieldTest(field);
    if (keeps === null) return null;
    if (keeps !== undefined) tests.push([field.localName, keeps]);
  }
  return tests;
}

/** `field`'s test; undefined without rules; null for rules not compiled. */
function fieldTest(field: DescField): Keeps | null | undefined {
  // A message, list or map may hold rules of its own type's: protovalidate walks it.
  if (field.fieldKind !== "scalar" && field.fieldKind !== "enum") return null;
  let rules: ReturnType<typeof fieldRules>;
  try {
    rules = fieldRules(field);
  } catch {
    return null;
  }
  const { required, maxLength, pattern, minimum, maximum, definedOnly } = rules;
  if (!required && maxLength === undefined && pattern === undefined) {
    if (minimum === undefined && maximum === undefined && !definedOnly) return undefined;
  }
  // Rules of a field with presence apply only when it is set: not compiled.
  if (field.presence !== FeatureSet_FieldPresence.IMPLICIT) return null;
  if (field.fieldKind === "enum") {
    if (pattern !== undefined || maxLength !== undefined) return null;
    const defined = new Set(field.enum.values.map((v) => v.number));
    return (v) =>
      typeof v === "number" &&
      (!required || v !== 0) &&
      (!definedOnly || defined.has(v)) &&
      (minimum === undefined || v >= minimum) &&
      (maximum === undefined || v <= maximum);
  }
  if (field.scalar === ScalarType.STRING) {
    if (minimum !== undefined || maximum !== undefined || definedOnly) return null;
    const re = pattern === undefined ? undefined : RE2JS.compile(pattern);
    return (v) =>
      typeof v === "string" &&
      (!required || v.length > 0) &&
      (maxLength === undefined || withinCodePoints(v, maxLength)) &&
      (re === undefined || re.test(v));
  }
  if (field.scalar === ScalarType.INT32) {
    if (maxLength !== undefined || pattern !== undefined || definedOnly) return null;
    return (v) =>
      typeof v === "number" &&
      (!required || v !== 0) &&
      (minimum === undefined || v >= minimum) &&
      (maximum === undefined || v <= maximum);
  }
  return null;
}

/** Whether `text` has at most `max` code points (never more than its UTF-16 units). */
function withinCodePoints(text: string, max: number): boolean {
  if (text.length <= max) return true;
  let count = 0;
  for (const _ of text) if (++count > max) return false;
  return true;
}
