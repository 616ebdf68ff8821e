import {
  create,
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescService,
  ScalarType,
} from "@bufbuild/protobuf";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import { WELL_FORMED_RULE } from "../../src/contract/check-request.js";
import { fieldRules, ruleValues } from "../../src/contract/field-rules.js";

/**
 * One request per rule of the protos: a valid request of each RPC with one field set to break
 * one of its rules, read from the protos themselves, so that a rule added to a proto is tested
 * on every transport without a line here.
 */
export interface RuleCase {
  service: DescService;
  method: DescMethod;
  field: DescField;
  /** The rule as protovalidate names the violation (`int32.gte_lte` for a range). */
  rule: string;
  /** The field's value that breaks it. */
  value: unknown;
  /**
   * Where the value can be sent: anywhere, or only in REST's JSON body (a lone surrogate: a
   * URL cannot carry it, and protobuf-es refuses it while parsing a message, JSON or binary).
   */
  wire: "any" | "rest body";
}

/** A valid value of each kind of request field, by name. */
const VALID: Record<string, unknown> = {
  quiz_id: "1",
  session_id: "01900000-0000-7000-8000-000000000000",
  question_id: "1",
  user_answer: "Paris",
};

/** A valid request of `schema`, with `field` set to `value`. */
export function requestWith(schema: DescMessage, field?: DescField, value?: unknown) {
  const message = create(schema) as unknown as Record<string, unknown>;
  for (const f of schema.fields)
    if (VALID[f.name] !== undefined) message[f.localName] = VALID[f.name];
  if (field !== undefined) message[field.localName] = value;
  return message;
}

function casesOf(service: DescService, method: DescMethod): RuleCase[] {
  return method.input.fields.flatMap((field): RuleCase[] => {
    const rules = fieldRules(field);
    const one = (rule: string, value: unknown, wire: RuleCase["wire"] = "any"): RuleCase => ({
      service,
      method,
      field,
      rule,
      value,
      wire,
    });
    const cases = ruleValues(field).map(([name]): RuleCase => {
      switch (name) {
        case "required":
          return one("required", "");
        case "string.max_len":
          return one(name, "x".repeat((rules.maxLength ?? 0) + 1));
        case "string.pattern":
          return one(name, " \t");
        case "int32.gte":
          return one(
            rules.maximum === undefined ? name : "int32.gte_lte",
            (rules.minimum ?? 0) - 1,
          );
        case "int32.lte":
          return one(
            rules.minimum === undefined ? name : "int32.gte_lte",
            (rules.maximum ?? 0) + 1,
          );
        case "enum.defined_only":
          return one(name, 99);
        default:
          throw new Error(`no breaking value for rule ${name} of ${field}`);
      }
    });
    if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING) {
      cases.push(one(WELL_FORMED_RULE, "a\ud800b", "rest body"));
    }
    return cases;
  });
}

/** Every rule of every request field of the services' RPCs. */
export const RULE_CASES: RuleCase[] = [PracticeSessionService, QuizService].flatMap((service) =>
  service.methods.flatMap((method) => casesOf(service, method)),
);

export const caseName = (c: RuleCase) => `${c.method.name} ${c.field.name} ${c.rule}`;
