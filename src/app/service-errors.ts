import { ConnectError } from "@connectrpc/connect";
import { isDatabaseUnavailable, isTransientConflict } from "../db/errors.js";
import { errors } from "./errors.js";
import { type RetryPolicy, withRetries } from "./retry.js";

/** Database failures escape the use cases as ConnectErrors, the cause kept for logs only. */

/**
 * Runs `attempt` again, after a jittered wait, while it fails with a transient
 * conflict or `retryWhen`, within `policy`; every escaping failure is a ConnectError.
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
