/**
 * Problem documents (RFC 9457), as every HTTP refusal of the service writes
 * them: the edge's (a head too large, a call refused at the door) and the
 * REST gateway's (rest/problem.ts).
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

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  499: "Client Closed Request",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

/** A problem of `status` with the Connect `code` and `detail`. */
export function problem(status: number, code: string, detail: string): Problem {
  return { type: "about:blank", title: titleOf(status), status, detail, code };
}

/** The problem `title` of an HTTP status: its reason phrase. */
export function titleOf(status: number): string {
  return TITLES[status] ?? "Error";
}
