import { Code } from "@connectrpc/connect";

/**
 * Connect's codes as the protocol names them on the wire, and the HTTP status
 * it gives each (connectrpc.com/docs/protocol): connect-es exports them only
 * as internal API.
 */
const CODES: Record<Code, [name: string, httpStatus: number]> = {
  [Code.Canceled]: ["canceled", 499],
  [Code.Unknown]: ["unknown", 500],
  [Code.InvalidArgument]: ["invalid_argument", 400],
  [Code.DeadlineExceeded]: ["deadline_exceeded", 504],
  [Code.NotFound]: ["not_found", 404],
  [Code.AlreadyExists]: ["already_exists", 409],
  [Code.PermissionDenied]: ["permission_denied", 403],
  [Code.ResourceExhausted]: ["resource_exhausted", 429],
  [Code.FailedPrecondition]: ["failed_precondition", 400],
  [Code.Aborted]: ["aborted", 409],
  [Code.OutOfRange]: ["out_of_range", 400],
  [Code.Unimplemented]: ["unimplemented", 501],
  [Code.Internal]: ["internal", 500],
  [Code.Unavailable]: ["unavailable", 503],
  [Code.DataLoss]: ["data_loss", 500],
  [Code.Unauthenticated]: ["unauthenticated", 401],
};

/** The code's name on the wire: "invalid_argument". */
export function codeName(code: Code): string {
  return CODES[code]?.[0] ?? "unknown";
}

/** The HTTP status the Connect protocol gives the code. */
export function codeHttpStatus(code: Code): number {
  return CODES[code]?.[1] ?? 500;
}
