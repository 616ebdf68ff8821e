import type { DescField } from "@bufbuild/protobuf";
import { fieldRules } from "./field-rules.js";

/**
 * What people read of a violation: the sentence the API has always given for a field's
 * mistakes where it has one, else one per rule. The rules themselves are the proto's;
 * these only say them in words (with the proto's numbers).
 */

/** The one sentence of a field whatever rule it breaks, where the field has one. */
const FIELD_SENTENCES: Record<string, (field: DescField) => string> = {
  limit: (field) => `limit must be an integer from 1 to ${fieldRules(field).maximum}`,
  cursor: () => "cursor is not a next_cursor this service returned",
  user_answer: (field) =>
    `user_answer must be 1 to ${fieldRules(field).maxLength} characters and not only white space`,
};

/** The sentence of `field` for any of its mistakes, if it has one. */
export function fieldSentence(field: DescField): string | undefined {
  return FIELD_SENTENCES[field.name]?.(field);
}

/**
 * The message of a violation of rule `ruleId` by `field`, whose value is `value`;
 * `fallback` is protovalidate's own message, for a rule without a sentence here. `name` is
 * the field's name where the caller names it otherwise (REST's `id` for `session_id`).
 */
export function violationMessage(
  field: DescField,
  ruleId: string,
  value: unknown,
  fallback: string,
  name = field.name,
): string {
  const sentence = fieldSentence(field);
  if (sentence !== undefined) return sentence;
  switch (ruleId) {
    case "required":
      return `${name} is required`;
    case "string.max_len":
      return `${name} must be at most ${fieldRules(field).maxLength} characters`;
    case "enum.defined_only":
      return `unknown ${name} ${String(value)}`;
    default:
      return `${name}: ${fallback}`;
  }
}

/** The message of a string field whose text is not well-formed Unicode (a lone surrogate). */
export function notWellFormedMessage(name: string): string {
  return `${name} is not well-formed Unicode`;
}
