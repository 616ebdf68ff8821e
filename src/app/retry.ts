import { sleep } from "../domain/clock.js";
/**
 * How a write that lost a race runs again: Galera nodes writing one row conflict
 * repeatedly, so a full-jitter wait spreads them out, within the request's deadline.
 */
export interface RetryPolicy {
  /** Most runs in all, the first included. */
  maxAttempts: number;
  /** Cap of the first wait; doubles per attempt up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** No retry starts later than this after the first run began (performance.now, as the call's deadline). */
  budgetMs: number;
  /** The call's signal: when it aborts, a wait ends at once with its reason and no run starts. */
  signal?: AbortSignal;
}

/**
 * In a call, the budget is the call's `retryBudgetMs` as edge/call-limits.ts gives it (half
 * of what the call has left as its work begins); outside one (scripts, tests) only
 * `maxAttempts` bounds the retries, some 1.4 s of waits.
 */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 8,
  baseDelayMs: 4,
  maxDelayMs: 200,
  budgetMs: Number.POSITIVE_INFINITY,
};

/** Random wait before attempt `n + 1` (n >= 1): uniform in [0, min(max, base * 2^(n-1))). */
export function backoffDelay(policy: RetryPolicy, n: number, random = Math.random): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (n - 1));
  return Math.floor(random() * cap);
}

/**
 * Runs `attempt` until it succeeds, or fails with an error `retryable` does
 * not accept, or the policy says stop; then throws that last error.
 */
export async function withRetries<T>(
  attempt: () => Promise<T>,
  retryable: (err: unknown) => boolean,
  policy: RetryPolicy = DEFAULT_RETRY_POLICY,
): Promise<T> {
  const started = performance.now();
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (!retryable(err) || n >= policy.maxAttempts) throw err;
      const delay = backoffDelay(policy, n);
      if (performance.now() + delay - started > policy.budgetMs) throw err;
      if (delay > 0) await sleep(delay, policy.signal);
      policy.signal?.throwIfAborted();
    }
  }
}
