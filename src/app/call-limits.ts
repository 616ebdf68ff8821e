/**
 * What a use case may spend of its call: worked out by the edge from the
 * call's deadline and the service's settings (edge/call-limits.ts), read
 * here through the call's signal, which every use case already takes.
 */
export interface CallLimits {
  /** Milliseconds left before the call's deadline (negative once passed). */
  remainingMs(): number;
  /** How long after its first run a write that lost a race may still start again. */
  retryBudgetMs(): number;
}

const LIMITS = Symbol("call limits");

type SignalWithLimits = AbortSignal & { [LIMITS]?: CallLimits };

/** Gives `signal`'s call its limits (the edge, as it makes the call). */
export function attachLimits(signal: AbortSignal, limits: CallLimits): void {
  (signal as SignalWithLimits)[LIMITS] = limits;
}

/** The limits of the call `signal` belongs to; none for work outside a call. */
export function limitsOf(signal: AbortSignal | undefined): CallLimits | undefined {
  return (signal as SignalWithLimits | undefined)?.[LIMITS];
}
