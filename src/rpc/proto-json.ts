import {
  type DescEnum,
  type DescField,
  type DescMessage,
  type JsonReadOptions,
  type JsonWriteStringOptions,
  ScalarType,
} from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { dotMillis, isoSeconds } from "../domain/iso-time.js";
import { LEGACY_REQUIRED, orLeftToProtobufEs, presentCode, refuse } from "./proto-writers.js";

/**
 * protobuf-es's `toJsonString`, written straight to a string for messages made
 * of strings, 32-bit integers, booleans, enums, Timestamps, and singular or
 * repeated messages of the same: a page of 20 sessions in about a third of the time,
 * much of it saved on Timestamps (protobuf-es formats each through a Date).
 * Undefined for any other schema and for any write option; the writer returns
 * undefined for what protobuf-es might refuse (a Timestamp out of range, a
 * value of the wrong type): the caller then asks protobuf-es. Byte for byte
 * protobuf-es's output (proto-json.test.ts).
 */
export function compileJsonWriter(
  schema: DescMessage,
  options: Partial<JsonReadOptions & JsonWriteStringOptions> = {},
): ((message: object) => string | undefined) | undefined {
  const writeOption =
    options.alwaysEmitImplicit || options.enumAsInteger || options.useProtoFieldName;
  // Connect's own option: another encoder of the string.
  const encoder = "textEncoder" in options;
  if (writeOption || encoder || options.registry || options.prettySpaces) return undefined;
  const write = compile(schema, new Map());
  return write && orLeftToProtobufEs(write);
}

type Write = (message: object) => string;

const INT32_KINDS = new Set([
  ScalarType.INT32,
  ScalarType.UINT32,
  ScalarType.SINT32,
  ScalarType.FIXED32,
  ScalarType.SFIXED32,
]);

/**
 * A writer for `schema`, or undefined when it holds a field this does not
 * write: one function generated per message (as fast-json-stringify does for
 * Fastify), each field a presence test and a concatenation. Every name in the
 * generated code is a JSON string literal.
 */
function compile(schema: DescMessage, seen: Map<DescMessage, Write>): Write | undefined {
  const known = seen.get(schema);
  if (known) return known;
  if (schema.typeName.startsWith("google.protobuf.")) {
    return schema.typeName === "google.protobuf.Timestamp"
      ? (m) => timestampJson(m as Timestamp)
      : undefined;
  }
  // The writers of nested messages, by index: filled in after this one is
  // registered, so that a recursive message finds it.
  const nested: Write[] = [];
  let generated: Write | undefined;
  const write: Write = (message) => (generated as Write)(message);
  seen.set(schema, write);
  const lines = [
    `if (m.$typeName !== ${JSON.stringify(schema.typeName)}) refuse();`,
    // `s` goes before each field: "{" before the first, "," after. Slicing a
    // leading comma off instead would copy each message's text, and the
    // page's, once more.
    `let o = "", s = "{", v;`,
  ];
  const sorted = [...schema.fields].sort((a, b) => a.number - b.number);
  for (const field of sorted) {
    if (field.oneof || field.presence === LEGACY_REQUIRED) return undefined;
    if (field.name === "__proto__" || field.jsonName === "__proto__") return undefined;
    const value = valueCode(field, seen, nested);
    if (value === undefined) return undefined;
    const local = JSON.stringify(field.localName);
    const key = `s + ${JSON.stringify(`${JSON.stringify(field.jsonName)}:`)}`;
    lines.push(`v = m[${local}];`);
    if (field.fieldKind === "list") {
      lines.push(
        "if (!Array.isArray(v)) refuse();",
        `if (v.length > 0) { o += ${key} + "[" + ${value("v[0]")}; s = ",";`,
        `  for (let i = 1; i < v.length; i++) o += "," + ${value("v[i]")};`,
        `  o += "]"; }`,
      );
    } else {
      lines.push(`if (${presentCode(field)}) { o += ${key} + ${value("v")}; s = ","; }`);
    }
  }
  lines.push(`return o === "" ? "{}" : o + "}";`);
  const body = `return (m) => { ${lines.join("\n")} };`;
  generated = new Function("refuse", "nested", "string", "int", "bool", body)(
    refuse,
    nested,
    writeString,
    writeInt,
    writeBool,
  ) as Write;
  return write;
}

/** The expression that writes one value `v` of `field` (each element, for a list), or undefined. */
function valueCode(field: DescField, seen: Map<DescMessage, Write>, nested: Write[]) {
  if (field.fieldKind === "map") return undefined;
  if (field.fieldKind === "enum" || (field.fieldKind === "list" && field.listKind === "enum")) {
    const descEnum = field.enum as DescEnum;
    if (descEnum.typeName === "google.protobuf.NullValue") return undefined;
    // Value names by number, as JSON strings; an unknown number is written as itself.
    const names = new Map(descEnum.values.map((v) => [v.number, JSON.stringify(v.jsonName)]));
    const index = nested.push((v) => writeEnum(names, v)) - 1;
    return (v: string) => `nested[${index}](${v})`;
  }
  if (
    field.fieldKind === "message" ||
    (field.fieldKind === "list" && field.listKind === "message")
  ) {
    const write = compile(field.message as DescMessage, seen);
    if (write === undefined) return undefined;
    const index = nested.push(write) - 1;
    return (v: string) => `nested[${index}](${v})`;
  }
  const scalar =
    field.fieldKind === "list" || field.fieldKind === "scalar" ? field.scalar : undefined;
  if (scalar === ScalarType.STRING) return (v: string) => `string(${v})`;
  if (scalar === ScalarType.BOOL) return (v: string) => `bool(${v})`;
  if (scalar !== undefined && INT32_KINDS.has(scalar)) return (v: string) => `int(${v})`;
  return undefined;
}

function writeEnum(names: Map<number, string>, v: unknown): string {
  if (typeof v !== "number" || !Number.isFinite(v)) refuse();
  return names.get(v) ?? String(v);
}

function writeString(v: unknown): string {
  return typeof v === "string" ? JSON.stringify(v) : refuse();
}

function writeInt(v: unknown): string {
  return typeof v === "number" && Number.isFinite(v) ? String(v) : refuse();
}

function writeBool(v: unknown): string {
  return v === true ? "true" : v === false ? "false" : refuse();
}

/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, the range protobuf-es writes. */
const MIN_SECONDS = -62_135_596_800;
const MAX_SECONDS = 253_402_300_799;

/** A Timestamp as protobuf-es writes it: RFC 3339 in UTC, 0, 3, 6 or 9 fraction digits. */
function timestampJson(ts: Timestamp): string {
  if (ts.$typeName !== "google.protobuf.Timestamp") refuse();
  const seconds = Number(ts.seconds);
  const nanos = ts.nanos;
  const valid = Number.isInteger(seconds) && Number.isInteger(nanos);
  if (!valid || seconds < MIN_SECONDS || seconds > MAX_SECONDS || nanos < 0 || nanos > 999_999_999)
    refuse();
  let fraction = "";
  if (nanos % 1_000_000 === 0) {
    // Milliseconds, as the service's times all are.
    if (nanos > 0) fraction = dotMillis(nanos / 1_000_000);
  } else {
    const digits = String(nanos + 1_000_000_000).slice(1);
    fraction = digits.endsWith("000") ? `.${digits.slice(0, 6)}` : `.${digits}`;
  }
  return `"${isoSeconds(seconds)}${fraction}Z"`;
}
