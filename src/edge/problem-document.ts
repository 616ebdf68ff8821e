import type { CodeMeaning } from "../app/codes.js";

/**
 * Problem documents (RFC 9457), as every HTTP refusal of the service writes
 * them: the edge's (a head too large, a call refused at the door) and the
 * REST gateway's (rest/send-problem.ts).
 */

/** An RFC 9457 problem document, plus the Connect code of the error. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  /** A 409 `already_exists` of an answer: the answer the question has, which stands (REST). */
  stored_answer?: unknown;
  /** A 400 of a review start with nothing due: when the next question is (null: none answered). */
  next_due_at?: string | null;
  /** A 400 `invalid_argument` of a request: every field that is wrong (REST). */
  errors?: { field: string; message: string }[];
}

/** The problem of an answer that `meaning` (codes.ts) describes, with `detail`. */
export function problem(meaning: CodeMeaning, detail: string): Problem {
  return {
    type: "about:blank",
    title: meaning.title,
    status: meaning.httpStatus,
    detail,
    code: meaning.name,
  };
}
