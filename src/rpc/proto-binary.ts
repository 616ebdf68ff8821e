import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { LEGACY_REQUIRED, orLeftToProtobufEs, presentCode, refuse } from "./proto-writers.js";

/**
 * protobuf-es's `toBinary`, written straight into one buffer for messages
 * made of strings, 32-bit integers, booleans, enums, Timestamps, and singular
 * or repeated messages of the same: the page of 20 sessions in a fraction of
 * protobuf-es's instructions (its shared field writers read each field by a
 * computed name, and each nested message gets a buffer of its own). Two
 * passes: the sizes of every length-delimited value, in the order the
 * second pass writes them, then the bytes. Undefined for any other schema;
 * the writer returns undefined for what protobuf-es might write otherwise or
 * refuse (unknown fields, a negative or out-of-range number, a value of the
 * wrong type): the caller then asks protobuf-es. Byte for byte protobuf-es's
 * output (proto-binary.test.ts).
 */
export function compileBinaryWriter(
  schema: DescMessage,
): ((message: object) => Uint8Array | undefined) | undefined {
  const compiled = compile(schema, new Map());
  if (compiled === undefined) return undefined;
  return orLeftToProtobufEs((message) => {
    const sizes: number[] = [];
    compiled.size(message, sizes);
    const out = new Output(Buffer.allocUnsafe(sizes[0] ?? 0), sizes);
    // The message's own size was the first entry: the buffer's.
    out.next = 1;
    compiled.write(message, out);
    return out.pos === out.buf.length ? out.buf : undefined;
  });
}

/** A message's two passes: `size` pushes its own size first, then its values' in write order. */
interface Compiled {
  size(message: object, sizes: number[]): number;
  write(message: object, out: Output): void;
}

const LEN = 2;
const VARINT = 0;

class Output {
  pos = 0;
  /** The next entry of `sizes` to read. */
  next = 0;
  constructor(
    readonly buf: Buffer,
    readonly sizes: number[],
  ) {}

  varint(n: number): void {
    const buf = this.buf;
    while (n > 0x7f) {
      buf[this.pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    buf[this.pos++] = n;
  }

  /** A length-delimited value's length, as its size pass found it. */
  length(): number {
    const n = this.sizes[this.next++] as number;
    this.varint(n);
    return n;
  }

  string(s: string): void {
    const n = this.length();
    if (n === s.length && n <= 64) {
      for (let i = 0; i < n; i++) this.buf[this.pos++] = s.charCodeAt(i);
    } else {
      this.pos += this.buf.write(s, this.pos, n, "utf8");
    }
  }
}

function varintSize(n: number): number {
  let size = 1;
  while (n > 0x7f) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** A non-negative 32-bit integer, or a refusal (protobuf-es writes negatives in 10 bytes). */
function uint32(v: unknown): number {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 0xffff_ffff ? v : refuse();
}
function int32(v: unknown): number {
  return typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 0x7fff_ffff ? v : refuse();
}
/** An int64 as protobuf-es holds it (a bigint), when it is a non-negative safe integer. */
function int64(v: unknown): number {
  if (typeof v !== "bigint" || v < 0n || v > 9_007_199_254_740_991n) refuse();
  return Number(v);
}
function bool(v: unknown): number {
  return v === true ? 1 : v === false ? 0 : refuse();
}
function string(v: unknown): string {
  return typeof v === "string" ? v : refuse();
}
function utf8Size(s: string): number {
  return Buffer.byteLength(s, "utf8");
}
function noUnknown(m: { $unknown?: unknown[] }): void {
  if (m.$unknown !== undefined && m.$unknown.length > 0) refuse();
}

/** The number reading of each scalar kind written as a varint, by name in the generated code. */
const NUMBERS: Partial<Record<ScalarType, string>> = {
  [ScalarType.INT32]: "int32",
  [ScalarType.UINT32]: "uint32",
  [ScalarType.INT64]: "int64",
  [ScalarType.BOOL]: "bool",
};

function compile(schema: DescMessage, seen: Map<DescMessage, Compiled>): Compiled | undefined {
  const known = seen.get(schema);
  if (known) return known;
  if (
    schema.typeName.startsWith("google.protobuf.") &&
    schema.typeName !== "google.protobuf.Timestamp"
  )
    return undefined;
  // Nested messages' passes, by index: filled in after this one is
  // registered, so that a recursive message finds it.
  const nested: Compiled[] = [];
  const compiled: Compiled = {
    size: (m, s) => (generated as Compiled).size(m, s),
    write: (m, o) => (generated as Compiled).write(m, o),
  };
  let generated: Compiled | undefined;
  seen.set(schema, compiled);
  const size = [
    `if (m.$typeName !== ${JSON.stringify(schema.typeName)}) refuse();`,
    "noUnknown(m);",
    "const slot = s.length; s.push(0);",
    "let n = 0, v, k;",
  ];
  const write = ["let v;"];
  const sorted = [...schema.fields].sort((a, b) => a.number - b.number);
  for (const field of sorted) {
    const code = fieldCode(field, seen, nested);
    if (code === undefined) return undefined;
    size.push(code.size);
    write.push(code.write);
  }
  size.push("s[slot] = n;", "return n;");
  const make = (params: string, body: string[]) =>
    new Function(
      "refuse",
      "noUnknown",
      "nested",
      "int32",
      "uint32",
      "int64",
      "bool",
      "string",
      "varintSize",
      "utf8Size",
      `return (${params}) => { ${body.join("\n")} };`,
    )(refuse, noUnknown, nested, int32, uint32, int64, bool, string, varintSize, utf8Size);
  generated = { size: make("m, s", size), write: make("m, o", write) };
  return compiled;
}

/** A field's code in both passes (`v`: its value; `n`: the size so far; `o`: the output). */
function fieldCode(field: DescField, seen: Map<DescMessage, Compiled>, nested: Compiled[]) {
  if (field.oneof || field.fieldKind === "map" || field.presence === LEGACY_REQUIRED)
    return undefined;
  const local = `m[${JSON.stringify(field.localName)}]`;
  const isList = field.fieldKind === "list";
  const kind = isList ? field.listKind : field.fieldKind;
  const value = valueCode(field, kind, seen, nested);
  if (value === undefined) return undefined;
  if (isList) {
    // Repeated scalars would be packed: not in these messages.
    if (kind !== "message") return undefined;
    return {
      size: `v = ${local}; for (let i = 0; i < v.length; i++) { ${value.size("v[i]")} }`,
      write: `v = ${local}; for (let i = 0; i < v.length; i++) { ${value.write("v[i]")} }`,
    };
  }
  const present = presentCode(field);
  return {
    size: `v = ${local}; if (${present}) { ${value.size("v")} }`,
    write: `v = ${local}; if (${present}) { ${value.write("v")} }`,
  };
}

/** One value's code with its tag, in both passes, or undefined. */
function valueCode(
  field: DescField,
  kind: string | undefined,
  seen: Map<DescMessage, Compiled>,
  nested: Compiled[],
) {
  const tag = (wire: number) => field.number * 8 + wire;
  if (kind === "message") {
    // Groups (delimited encoding) are written otherwise.
    if ((field as { delimitedEncoding?: boolean }).delimitedEncoding) return undefined;
    const child = compile(field.message as DescMessage, seen);
    if (child === undefined) return undefined;
    const i = nested.push(child) - 1;
    const t = tag(LEN);
    return {
      size: (v: string) =>
        `k = nested[${i}].size(${v}, s); n += ${varintSize(t)} + varintSize(k) + k;`,
      write: (v: string) => `o.varint(${t}); o.length(); nested[${i}].write(${v}, o);`,
    };
  }
  const scalar = kind === "enum" ? ScalarType.INT32 : (field as { scalar?: ScalarType }).scalar;
  if (scalar === ScalarType.STRING) {
    const t = tag(LEN);
    return {
      size: (v: string) =>
        `k = utf8Size(string(${v})); s.push(k); n += ${varintSize(t)} + varintSize(k) + k;`,
      write: (v: string) => `o.varint(${t}); o.string(${v});`,
    };
  }
  const read = scalar === undefined ? undefined : NUMBERS[scalar];
  if (read === undefined) return undefined;
  const t = tag(VARINT);
  return {
    size: (v: string) => `n += ${varintSize(t)} + varintSize(${read}(${v}));`,
    write: (v: string) => `o.varint(${t}); o.varint(${read}(${v}));`,
  };
}
