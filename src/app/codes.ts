import { Code } from "@connectrpc/connect";

/**
 * What each outcome of a call means, on every transport, in one table: its
 * name on the wire (Connect's, and REST's `code`), the HTTP status Connect
 * and REST give it, its gRPC status number, whether the caller is told to
 * retry after `Retry-After` seconds, and whether it is the server's fault
 * (an error span, an error log) rather than the caller's. REST problem+json,
 * Connect and the short path, the door's early answers, the request log,
 * metrics and spans all read it.
 */
export interface CodeMeaning {
  /** Connect's name: "invalid_argument"; "ok" for success. */
  readonly name: string;
  /** The HTTP status Connect's protocol gives it (connectrpc.com/docs/protocol), REST's too. */
  readonly httpStatus: number;
  /** gRPC's status number (`grpc-status`, `rpc.grpc.status_code`). */
  readonly grpcStatus: number;
  /** Seconds the caller is told to wait before retrying (`Retry-After`); none: not said. */
  readonly retryAfterSeconds: number | undefined;
  /** The server's failure (the gRPC semantic conventions' list), not the caller's mistake. */
  readonly serverFault: boolean;
}

/** Seconds a caller refused for load (`unavailable`, `resource_exhausted`) is told to wait. */
export const RETRY_AFTER_SECONDS = 1;

const row = (
  name: string,
  httpStatus: number,
  grpcStatus: number,
  options: { retry?: boolean; fault?: boolean } = {},
): CodeMeaning => ({
  name,
  httpStatus,
  grpcStatus,
  retryAfterSeconds: options.retry ? RETRY_AFTER_SECONDS : undefined,
  serverFault: options.fault === true,
});

/** Every Connect code; a code's gRPC number is the enum's value. */
const MEANINGS: Readonly<Record<Code, CodeMeaning>> = {
  [Code.Canceled]: row("canceled", 499, Code.Canceled),
  [Code.Unknown]: row("unknown", 500, Code.Unknown, { fault: true }),
  [Code.InvalidArgument]: row("invalid_argument", 400, Code.InvalidArgument),
  [Code.DeadlineExceeded]: row("deadline_exceeded", 504, Code.DeadlineExceeded, { fault: true }),
  [Code.NotFound]: row("not_found", 404, Code.NotFound),
  [Code.AlreadyExists]: row("already_exists", 409, Code.AlreadyExists),
  [Code.PermissionDenied]: row("permission_denied", 403, Code.PermissionDenied),
  [Code.ResourceExhausted]: row("resource_exhausted", 429, Code.ResourceExhausted, {
    retry: true,
  }),
  [Code.FailedPrecondition]: row("failed_precondition", 400, Code.FailedPrecondition),
  [Code.Aborted]: row("aborted", 409, Code.Aborted),
  [Code.OutOfRange]: row("out_of_range", 400, Code.OutOfRange),
  [Code.Unimplemented]: row("unimplemented", 501, Code.Unimplemented, { fault: true }),
  [Code.Internal]: row("internal", 500, Code.Internal, { fault: true }),
  [Code.Unavailable]: row("unavailable", 503, Code.Unavailable, { retry: true, fault: true }),
  [Code.DataLoss]: row("data_loss", 500, Code.DataLoss, { fault: true }),
  [Code.Unauthenticated]: row("unauthenticated", 401, Code.Unauthenticated),
};

/** Success: a call answered with its result. */
export const OK: CodeMeaning = row("ok", 200, 0);

/** Every code's meaning, success first. */
export const CODE_MEANINGS: readonly CodeMeaning[] = [OK, ...Object.values(MEANINGS)];

const BY_NAME = new Map(CODE_MEANINGS.map((m) => [m.name, m]));

/** What `code` means; an unknown number means what `unknown` does. */
export function meaningOf(code: Code): CodeMeaning {
  return MEANINGS[code] ?? MEANINGS[Code.Unknown];
}

/** What the code named `name` ("invalid_argument", "ok") means; an unknown name, `unknown`. */
export function meaningOfName(name: string): CodeMeaning {
  return BY_NAME.get(name) ?? MEANINGS[Code.Unknown];
}

/** The code's name on the wire: "invalid_argument". */
export function codeName(code: Code): string {
  return meaningOf(code).name;
}

/** The HTTP status of the code, REST's and Connect's. */
export function codeHttpStatus(code: Code): number {
  return meaningOf(code).httpStatus;
}

/**
 * `Retry-After` of an answer of code `name` with HTTP `status`: said only
 * for a refusal for load (the code's own status), never for a request too
 * large (413 and 431 are `resource_exhausted` too, and no wait helps them).
 */
export function retryAfterOf(name: string, status: number): number | undefined {
  const meaning = meaningOfName(name);
  return meaning.httpStatus === status ? meaning.retryAfterSeconds : undefined;
}

/**
 * The code a bare HTTP status stands for, where no code was said (Fastify's
 * and Node's own refusals): the table's row for it (for a status several
 * codes share, the general one), and the statuses only HTTP has.
 */
export function codeNameOfStatus(status: number): string | undefined {
  return STATUS_CODES.get(status);
}

/** Codes that share their status with a more general one, which a bare status stands for. */
const SHARED_LESS_GENERAL = new Set([
  "failed_precondition",
  "out_of_range",
  "aborted",
  "unknown",
  "data_loss",
]);

const STATUS_CODES = new Map<number, string>([
  // HTTP's own refusals, before any code: a slow request, a body or head too large, a type not read.
  [408, "deadline_exceeded"],
  [413, "resource_exhausted"],
  [415, "unimplemented"],
  [431, "resource_exhausted"],
  ...CODE_MEANINGS.filter((m) => m.name !== "ok" && !SHARED_LESS_GENERAL.has(m.name)).map(
    (m) => [m.httpStatus, m.name] as [number, string],
  ),
]);
