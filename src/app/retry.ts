import { ConnectError } from "@connectrpc/connect";
import { isDatabaseUnavailable, isTransientConflict } from "../db/errors.js";
import { errors } from "../domain/errors.js";

/**
 * How the use cases meet database failures: a write that lost a race or a
 * deadlock runs again; whatever escapes is a ConnectError, the database
 * error kept as its `cause` for logs, never shown to the client.
 */

/** How often a write runs again after losing a race or a deadlock. */
const ATTEMPTS = 5;

/**
 * Runs `attempt` again while it fails with a deadlock, a lock wait timeout or
 * `retryWhen`, at most ATTEMPTS times. Every failure that escapes is a
 * ConnectError; a database error stays reachable as its `cause`.
 */
export async function retrying<T>(
  attempt: () => Promise<T>,
  retryWhen?: (err: unknown) => boolean,
): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      const again = isTransientConflict(err) || retryWhen?.(err) === true;
      if (!again || n >= ATTEMPTS) throw toServiceError(err);
    }
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
