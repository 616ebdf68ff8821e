/** Refusals a caller gets at once in a burst, and how many a second after that. */
export interface PaceLimits {
  burst: number;
  perSecond: number;
  /** How long a refusal beyond that is held before it is answered. */
  holdMs: number;
}

/**
 * Default: a learner whose token expired, or who is briefly over their
 * share, hears so at once; a client that ignores `Retry-After` and loops
 * hears it once per `holdMs` per request it has open, so refusals cost the
 * service a bounded share of its CPU whatever the client's loop.
 */
const PACE_LIMITS: PaceLimits = { burst: 20, perSecond: 10, holdMs: 1_000 };

/** Callers remembered at once; beyond, the oldest are forgotten (they start a new burst). */
const MAX_CALLERS = 10_000;

interface Allowance {
  left: number;
  at: number;
}

/**
 * Paces the refusals each caller gets (a token bucket per caller): how long
 * to hold one before answering it. Holding costs a timer and the request's
 * stream or connection, which the client's own limits then bound; answering
 * at once would let a tight loop buy CPU with refusals.
 */
export class RefusalPace {
  readonly #callers = new Map<string, Allowance>();

  constructor(
    readonly limits: PaceLimits = PACE_LIMITS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Milliseconds to hold a refusal of `key` before answering it: 0 within its allowance. */
  holdMs(key: string): number {
    const now = this.now();
    let allowance = this.#callers.get(key);
    if (allowance === undefined) {
      if (this.#callers.size >= MAX_CALLERS) {
        const oldest = this.#callers.keys().next().value;
        if (oldest !== undefined) this.#callers.delete(oldest);
      }
      allowance = { left: this.limits.burst, at: now };
      this.#callers.set(key, allowance);
    }
    const { burst, perSecond, holdMs } = this.limits;
    allowance.left = Math.min(burst, allowance.left + ((now - allowance.at) / 1000) * perSecond);
    allowance.at = now;
    if (allowance.left >= 1) {
      allowance.left -= 1;
      return 0;
    }
    return holdMs;
  }
}
