import {
  type DescField,
  type DescMessage,
  type MessageShape,
  ScalarType,
} from "@bufbuild/protobuf";
import { buildPath, parsePath, pathToString } from "@bufbuild/protobuf/reflect";
import { createValidator, Violation, violationsToProto } from "@bufbuild/protovalidate";
import { errors, type FieldViolation, InvalidRequest } from "../app/errors.js";
import { surelyValid } from "./surely-valid.js";
import { notWellFormedMessage, violationMessage } from "./violation-messages.js";

/** The id of the service's one rule no proto states: every string is well-formed Unicode. */
export const WELL_FORMED_RULE = "well_formed_unicode";

const validator = createValidator();
// A lone surrogate is a code point of category Cs; a proper pair is one code
// point of another category, so it does not match.
const LONE_SURROGATE = /\p{Cs}/u;
const stringFields = new WeakMap<DescMessage, DescField[]>();

/**
 * The one validation step of every transport, before a call takes an admission slot: the
 * request `message` of `schema` against the rules its proto states (protovalidate), and every
 * string of it well-formed Unicode (JSON's `"\ud800"` cannot be stored as UTF-8). Returns the
 * `invalid_argument` naming every violation, with them as a `buf.validate.Violations` error
 * detail, or undefined for a valid request.
 */
export function invalidRequest<D extends DescMessage>(
  schema: D,
  message: MessageShape<D>,
): InvalidRequest | undefined {
  const violations = requestViolations(schema, message);
  if (violations.length === 0) return undefined;
  const [value, desc] = violationsToProto(violations);
  return new InvalidRequest(violations.map(fieldViolation), [{ desc, value }]);
}

/**
 * The violations of `message`, in the order of the fields, each with the message people read
 * (violation-messages.ts); `skip`: fields already found wrong otherwise (REST's decoding);
 * `names`: fields the caller names otherwise, for the messages.
 */
export function requestViolations<D extends DescMessage>(
  schema: D,
  message: MessageShape<D>,
  skip?: ReadonlySet<DescField>,
  names?: ReadonlyMap<DescField, string>,
): Violation[] {
  const result = surelyValid(schema, message) ? undefined : validator.validate(schema, message);
  // A rule protovalidate cannot compile or evaluate is the server's fault.
  if (result?.kind === "error") throw errors.internal(result.error);
  const found: Violation[] = [];
  const values = message as unknown as Record<string, unknown>;
  for (const v of result?.violations ?? []) {
    const field = v.field[0];
    if (field?.kind !== "field") {
      found.push(v);
    } else if (!skip?.has(field)) {
      const value = values[field.localName];
      const name = names?.get(field);
      const message = violationMessage(field, v.ruleId, value, v.message, name);
      found.push(new Violation(message, v.ruleId, v.field, v.rule, v.forKey));
    }
  }
  for (const field of stringFieldsOf(schema)) {
    const text = values[field.localName];
    if (typeof text === "string" && LONE_SURROGATE.test(text) && !skip?.has(field)) {
      const path = buildPath(schema).field(field).toPath();
      const text = notWellFormedMessage(names?.get(field) ?? field.name);
      found.push(new Violation(text, WELL_FORMED_RULE, path, [], false));
    }
  }
  return found.length > 1 ? found.sort((a, b) => fieldNumber(a) - fieldNumber(b)) : found;
}

/** A violation as every transport names it: the field's path, the rule's id, the message. */
function fieldViolation(v: Violation): FieldViolation {
  return { field: pathToString(v.field), rule: v.ruleId, message: v.message };
}

/**
 * `err`, a use case's refusal of fields of a `schema` request (a cursor it cannot read, a
 * question not in the session), with its violations as a `buf.validate.Violations` detail,
 * as the validation step's refusals carry them.
 */
export function withViolationsDetail(schema: DescMessage, err: InvalidRequest): InvalidRequest {
  if (err.details.length > 0) return err;
  const violations = err.violations.map(
    (v) => new Violation(v.message, v.rule, fieldPath(schema, v.field), [], false),
  );
  const [value, desc] = violationsToProto(violations);
  err.details.push({ desc, value });
  return err;
}

function fieldPath(schema: DescMessage, field: string) {
  try {
    return parsePath(schema, field);
  } catch {
    return [];
  }
}

function fieldNumber(v: Violation): number {
  const first = v.field[0];
  return first?.kind === "field" ? first.number : Number.MAX_SAFE_INTEGER;
}

function stringFieldsOf(schema: DescMessage): DescField[] {
  let fields = stringFields.get(schema);
  if (fields === undefined) {
    fields = schema.fields.filter(
      (f) => f.fieldKind === "scalar" && f.scalar === ScalarType.STRING,
    );
    stringFields.set(schema, fields);
  }
  return fields;
}
