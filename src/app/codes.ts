import { Code } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { HEADER_RETRY_AFTER } from "./headers.js";

/**
 * Whose doing a failure is, for its log line, metrics, span and failure log:
 * the caller's (a bad request, a missing token), load's (shed, over a share,
 * out of time), or ours (a fault in the service: an error line with a stack).
 */
export type Fault = "none" | "caller" | "load" | "ours";

/**
 * What each outcome of a call means, on every transport, in one table: its
 * name on the wire (Connect's, and REST's `code`), the HTTP status Connect
 * and REST give it, its gRPC status number, whether the caller is told to
 * retry after `Retry-After` seconds, whose fault it is, and whether its span
 * is an error. HTTP's own refusals (`HTTP_REFUSALS`) are rows of the same shape.
 */
export interface CodeMeaning {
  /** Connect's name: "invalid_argument"; "ok" for success. */
  readonly name: string;
  /** The HTTP status Connect's protocol gives it (connectrpc.com/docs/protocol), REST's too. */
  readonly httpStatus: number;
  /** The status's reason phrase: a problem's `title`. */
  readonly title: string;
  /** gRPC's status number (`grpc-status`, `rpc.grpc.status_code`). */
  readonly grpcStatus: number;
  /** Seconds the caller is told to wait before retrying (`Retry-After`); none: not said. */
  readonly retryAfterSeconds: number | undefined;
  /** Whose doing it is: what the request log, the failure log and metrics go by. */
  readonly fault: Fault;
  /**
   * The server failed (the gRPC semantic conventions' list of server errors):
   * an error span, and a line in the failure log.
   */
  readonly serverFault: boolean;
}

/** Seconds a caller refused for load (`unavailable`, `resource_exhausted`) is told to wait. */
export const RETRY_AFTER_SECONDS = 1;

const meaning = (
  name: string,
  grpcStatus: number,
  httpStatus: number,
  title: string,
  fault: Fault,
  options: { retry?: boolean; errorSpan?: boolean } = {},
): CodeMeaning => ({
  name,
  httpStatus,
  title,
  grpcStatus,
  retryAfterSeconds: options.retry ? RETRY_AFTER_SECONDS : undefined,
  fault,
  serverFault: options.errorSpan === true,
});

/** A code's row: its name is Connect's for it, its gRPC number the enum's value. */
const row = (
  code: Code,
  httpStatus: number,
  title: string,
  fault: Fault,
  options?: { retry?: boolean; errorSpan?: boolean },
): CodeMeaning => meaning(codeToString(code), code, httpStatus, title, fault, options);

/** Every Connect code; a code's gRPC number is the enum's value. */
const MEANINGS: Readonly<Record<Code, CodeMeaning>> = {
  [Code.Canceled]: row(Code.Canceled, 499, "Client Closed Request", "caller"),
  [Code.Unknown]: row(Code.Unknown, 500, "Internal Server Error", "ours", {
    errorSpan: true,
  }),
  [Code.InvalidArgument]: row(Code.InvalidArgument, 400, "Bad Request", "caller"),
  [Code.DeadlineExceeded]: row(Code.DeadlineExceeded, 504, "Gateway Timeout", "load", {
    errorSpan: true,
  }),
  [Code.NotFound]: row(Code.NotFound, 404, "Not Found", "caller"),
  [Code.AlreadyExists]: row(Code.AlreadyExists, 409, "Conflict", "caller"),
  [Code.PermissionDenied]: row(Code.PermissionDenied, 403, "Forbidden", "caller"),
  [Code.ResourceExhausted]: row(Code.ResourceExhausted, 429, "Too Many Requests", "load", {
    retry: true,
  }),
  [Code.FailedPrecondition]: row(Code.FailedPrecondition, 400, "Bad Request", "caller"),
  [Code.Aborted]: row(Code.Aborted, 409, "Conflict", "caller"),
  [Code.OutOfRange]: row(Code.OutOfRange, 400, "Bad Request", "caller"),
  // The caller asked for what the service does not offer (a method, a compression): its
  // doing, so a flood of them buys no log line each; still an error span, as gRPC's list says.
  [Code.Unimplemented]: row(Code.Unimplemented, 501, "Not Implemented", "caller", {
    errorSpan: true,
  }),
  [Code.Internal]: row(Code.Internal, 500, "Internal Server Error", "ours", {
    errorSpan: true,
  }),
  [Code.Unavailable]: row(Code.Unavailable, 503, "Service Unavailable", "load", {
    retry: true,
    errorSpan: true,
  }),
  [Code.DataLoss]: row(Code.DataLoss, 500, "Internal Server Error", "ours", {
    errorSpan: true,
  }),
  [Code.Unauthenticated]: row(Code.Unauthenticated, 401, "Unauthorized", "caller"),
};

/** Success: a call answered with its result. */
export const OK: CodeMeaning = meaning("ok", 0, 200, "OK", "none");

/** Every code's meaning, success first. */
export const CODE_MEANINGS: readonly CodeMeaning[] = [OK, ...Object.values(MEANINGS)];

/**
 * A refusal HTTP has a status of its own for, with the code it is on every
 * transport (gRPC: that code's number). Always the caller's doing, never
 * worth a retry as it was sent. 415 is `unimplemented`, as connect-es
 * answers a request in a form it does not take (an unknown compression).
 */
const refusal = (code: Code, httpStatus: number, title: string): CodeMeaning => ({
  ...MEANINGS[code],
  httpStatus,
  title,
  retryAfterSeconds: undefined,
  fault: "caller",
  serverFault: false,
});

/** HTTP's own refusals, before or beside any code. */
export const HTTP_REFUSALS = {
  methodNotAllowed: refusal(Code.Unimplemented, 405, "Method Not Allowed"),
  requestTimeout: refusal(Code.DeadlineExceeded, 408, "Request Timeout"),
  contentTooLarge: refusal(Code.ResourceExhausted, 413, "Content Too Large"),
  unsupportedMediaType: refusal(Code.Unimplemented, 415, "Unsupported Media Type"),
  headTooLarge: refusal(Code.ResourceExhausted, 431, "Request Header Fields Too Large"),
} as const;

const REFUSALS_BY_STATUS = new Map<number, CodeMeaning>(
  Object.values(HTTP_REFUSALS).map((m) => [m.httpStatus, m]),
);

const BY_NAME = new Map(CODE_MEANINGS.map((m) => [m.name, m]));

/** What `code` means; an unknown number means what `unknown` does. */
export function meaningOf(code: Code): CodeMeaning {
  return MEANINGS[code] ?? MEANINGS[Code.Unknown];
}

/** What the code named `name` ("invalid_argument", "ok") means; an unknown name, `unknown`. */
export function meaningOfName(name: string): CodeMeaning {
  return BY_NAME.get(name) ?? MEANINGS[Code.Unknown];
}

/**
 * What an answer of code `name` with HTTP `status` means: HTTP's refusal of
 * that status when it is one of that code (413 and 431 are
 * `resource_exhausted` too, and no wait helps them), else the code's row.
 */
export function meaningOfAnswer(name: string, status: number): CodeMeaning {
  const refused = REFUSALS_BY_STATUS.get(status);
  return refused !== undefined && refused.name === name ? refused : meaningOfName(name);
}

/** The code's name on the wire: "invalid_argument". */
export function codeName(code: Code): string {
  return meaningOf(code).name;
}

/** The HTTP status of the code, REST's and Connect's. */
export function codeHttpStatus(code: Code): number {
  return meaningOf(code).httpStatus;
}

/** The `Retry-After` header of an answer that says one, else none: the one place it is written. */
export function retryAfterHeaders(meaning: CodeMeaning): Record<string, string> {
  return meaning.retryAfterSeconds === undefined
    ? {}
    : { [HEADER_RETRY_AFTER]: String(meaning.retryAfterSeconds) };
}

/**
 * What a bare HTTP status stands for, where no code was said (Fastify's and
 * Node's own refusals): HTTP's refusal of that status, else the table's row
 * for it (for a status several codes share, the general one).
 */
export function meaningOfStatus(status: number): CodeMeaning | undefined {
  return REFUSALS_BY_STATUS.get(status) ?? BY_STATUS.get(status);
}

/** HTTP's own refusal of `status` (405, 408, 413, 415, 431), if it is one. */
export function httpRefusalOf(status: number): CodeMeaning | undefined {
  return REFUSALS_BY_STATUS.get(status);
}

/** The fault of an answer known only by its status: its meaning's, else 5xx ours and 4xx the caller's. */
export function faultOfStatus(status: number): Fault {
  return meaningOfStatus(status)?.fault ?? (status >= 500 ? "ours" : "caller");
}

/** Codes that share their status with a more general one, which a bare status stands for. */
const SHARED_LESS_GENERAL = new Set([
  "failed_precondition",
  "out_of_range",
  "aborted",
  "unknown",
  "data_loss",
]);

const BY_STATUS = new Map<number, CodeMeaning>(
  CODE_MEANINGS.filter((m) => m.name !== "ok" && !SHARED_LESS_GENERAL.has(m.name)).map((m) => [
    m.httpStatus,
    m,
  ]),
);
