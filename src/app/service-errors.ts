import { ConnectError } from "@connectrpc/connect";
import { isDatabaseUnavailable, isTransientConflict } from "../db/errors.js";
import { errors } from "./errors.js";
import { type RetryPolicy, withRetries } from "./retry.js";

/**
 * How the use cases meet database failures: whatever escapes them is a
 * ConnectError, the database error kept as its `cause` for logs, never shown
 * to the client. Writes that lost a race run again (retry.ts).
 */

/**
 * Runs `attempt` again, after a jittered wait, while it fails with a
 * deadlock, a lock wait timeout, a Galera certification conflict or
 * `retryWhen`, within `policy` (see retry.ts). Every failure that escapes is
 * a ConnectError; a database error stays reachable as its `cause`.
 */
export async function retrying<T>(
  attempt: () => Promise<T>,
  policy: RetryPolicy,
  retryWhen?: (err: unknown) => boolean,
): Promise<T> {
  try {
    return await withRetries(
      attempt,
      (err) => isTransientConflict(err) || retryWhen?.(err) === true,
      policy,
    );
  } catch (err) {
    throw toServiceError(err);
  }
}

/** Runs a database call, turning its failures into service errors. */
export async function guard<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    throw toServiceError(err);
  }
}

/** Keeps ConnectErrors; database outages become `unavailable`, the rest `internal`. */
export function toServiceError(err: unknown): ConnectError {
  if (err instanceof ConnectError) return err;
  return isDatabaseUnavailable(err) ? errors.unavailable(err) : errors.internal(err);
}
