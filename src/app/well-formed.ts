import { errors } from "./errors.js";

// A lone surrogate is a code point of category Cs; a proper pair is one
// code point of another category, so it does not match.
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Refuses, with `invalid_argument`, the first of `fields` that is not
 * well-formed Unicode: a lone surrogate (JSON's `\ud800`) cannot be stored as
 * UTF-8. Non-UTF-8 bytes are refused where they are decoded.
 */
export function requireWellFormed(fields: Record<string, string | undefined>): void {
  for (const [name, text] of Object.entries(fields)) {
    if (text !== undefined && LONE_SURROGATE.test(text)) {
      throw errors.invalidArgument(`${name} is not well-formed Unicode`);
    }
  }
}
