/** The service's only source of "now", so tests can move time. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until told to move: for tests. */
export class FakeClock implements Clock {
  constructor(private current: Date = new Date("2026-01-01T00:00:00.000Z")) {}
  now(): Date {
    return new Date(this.current.getTime());
  }
  set(date: Date): void {
    this.current = new Date(date.getTime());
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

/**
 * `time`, or the latest of `earlier` if one is later: replicas' clocks
 * disagree, and a session's times must still never go backwards (an answer
 * before its session started, a completion before an answer).
 */
export function notBefore(time: Date, ...earlier: (Date | null | undefined)[]): Date {
  let latest = time;
  for (const t of earlier) if (t && t.getTime() > latest.getTime()) latest = t;
  return latest === time ? time : new Date(latest.getTime());
}

/** Resolves after `ms`, or rejects with `signal`'s reason as soon as it aborts (or at once). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
