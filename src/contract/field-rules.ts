import { type DescField, getOption, hasOption } from "@bufbuild/protobuf";
import { type ReflectMessage, reflect } from "@bufbuild/protobuf/reflect";
import {
  FieldRulesSchema,
  field as fieldRulesOption,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";

/**
 * What a request field's protovalidate rules (`buf.validate.field`) say, in the few terms the
 * service's protos use: for the messages people read and for the REST gateway's schemas.
 */
export interface FieldRules {
  /** `required`: set, and for a string not empty. */
  readonly required: boolean;
  /** `string.max_len`: at most this many characters (code points). */
  readonly maxLength?: number;
  /** `string.pattern`: an RE2 expression some part of the text matches. */
  readonly pattern?: string;
  /** `int32.gte`, `int32.lte`. */
  readonly minimum?: number;
  readonly maximum?: number;
  /** `enum.defined_only`: one of the enum's values. */
  readonly definedOnly: boolean;
}

/** The rules `fieldRules` reads, by their protovalidate names. */
const KNOWN = new Set([
  "required",
  "string.max_len",
  "string.pattern",
  "int32.gte",
  "int32.lte",
  "enum.defined_only",
]);

/**
 * `field`'s rules. A rule outside these terms throws: the REST gateway and its OpenAPI could
 * not state it, so a proto that gains one must teach this function (and them) first.
 */
export function fieldRules(field: DescField): FieldRules {
  const set = new Map(ruleValues(field));
  for (const name of set.keys()) {
    if (!KNOWN.has(name)) throw new Error(`${field}: the REST gateway cannot state rule ${name}`);
  }
  const number = (name: string) => {
    const value = set.get(name);
    return value === undefined ? undefined : Number(value);
  };
  const pattern = set.get("string.pattern");
  return {
    required: set.get("required") === true,
    maxLength: number("string.max_len"),
    pattern: typeof pattern === "string" ? pattern : undefined,
    minimum: number("int32.gte"),
    maximum: number("int32.lte"),
    definedOnly: set.get("enum.defined_only") === true,
  };
}

/**
 * Every rule set on `field`, by its protovalidate name (`required`, `string.max_len`, ...), with
 * its value: what a test compares with the REST gateway's schemas, rule for rule.
 */
export function ruleValues(field: DescField): [string, unknown][] {
  if (!hasOption(field, fieldRulesOption)) return [];
  const rules = reflect(FieldRulesSchema, getOption(field, fieldRulesOption));
  return setFields(rules, "");
}

function setFields(message: ReflectMessage, prefix: string): [string, unknown][] {
  return message.fields.flatMap((f): [string, unknown][] => {
    if (!message.isSet(f)) return [];
    const name = `${prefix}${f.name}`;
    if (f.fieldKind === "message") {
      return setFields(message.get(f) as ReflectMessage, `${name}.`);
    }
    return [
      [name, f.fieldKind === "list" ? [...(message.get(f) as Iterable<unknown>)] : message.get(f)],
    ];
  });
}
