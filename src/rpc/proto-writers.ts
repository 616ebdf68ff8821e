import { type DescField, ScalarType } from "@bufbuild/protobuf";

/** What the compiled writers share (proto-json.ts, proto-binary.ts). */

/** Thrown where protobuf-es might write otherwise or throw: the call starts over on its path. */
const REFUSED = Symbol("left to protobuf-es");

export function refuse(): never {
  throw REFUSED;
}

/** `write` answering undefined where it refused, for the caller to ask protobuf-es. */
export function orLeftToProtobufEs<T>(write: (message: object) => T) {
  return (message: object): T | undefined => {
    try {
      return write(message);
    } catch (e) {
      if (e === REFUSED) return undefined;
      throw e;
    }
  };
}

export const LEGACY_REQUIRED = 3;
const IMPLICIT = 2;
const EDITION_PROTO3 = 999;

/**
 * The test, on the singular field's value `v` of message `m`, that it is set,
 * as protobuf-es writes it: for explicit presence, defined (and, where a
 * proto2 message holds defaults on its prototype, its own); otherwise not
 * the zero value: "" for strings, false for booleans, the first value
 * (strictly) for enums, a loose 0 otherwise (0, 0n and "0").
 */
export function presentCode(field: DescField): string {
  if (field.presence !== IMPLICIT) {
    return field.parent.file.edition === EDITION_PROTO3
      ? "v !== undefined"
      : `v !== undefined && Object.hasOwn(m, ${JSON.stringify(field.localName)})`;
  }
  if (field.fieldKind === "enum") return `v !== ${field.enum.values[0]?.number ?? 0}`;
  const scalar = field.fieldKind === "scalar" ? field.scalar : undefined;
  if (scalar === ScalarType.STRING) return `v !== ""`;
  if (scalar === ScalarType.BOOL) return "v !== false";
  return "v != 0";
}
