/** A call waiting on the sweep: when it expires, and how to end it. */
interface Pending {
  at: number;
  fail: (err: unknown) => void;
  signal: AbortSignal;
}

/**
 * One timer for the deadlines of every call in flight, instead of a
 * `setTimeout`, a `Promise.race` and an abort listener per call. The timer is
 * armed for the earliest deadline; calls ending first only leave the set.
 * With one server timeout for all, a newer call never expires before an
 * older one, so the timer fires about once per timeout, whatever the rate,
 * and each firing looks at the calls then in flight.
 *
 * A call whose signal aborted (its client went away) is ended at the next
 * firing; a caller that needs the abort at once (a client deadline) passes
 * `watchSignal`, which costs a listener.
 */
export class DeadlineSweep {
  readonly #pending = new Set<Pending>();
  #timer: NodeJS.Timeout | undefined;
  #armedAt = Number.POSITIVE_INFINITY;
  readonly #expired: () => unknown;
  readonly #aborted: (signal: AbortSignal) => unknown;

  /**
   * @param expired the error a call ends with at its deadline.
   * @param aborted the error a call ends with when its signal aborts.
   */
  constructor(expired: () => unknown, aborted: (signal: AbortSignal) => unknown) {
    this.#expired = expired;
    this.#aborted = aborted;
  }

  /** Settles as `work` does, or fails at `timeoutMs` from now or when `signal` aborts. */
  race<T>(
    work: Promise<T>,
    timeoutMs: number,
    signal: AbortSignal,
    watchSignal: boolean,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (signal.aborted) {
        reject(this.#aborted(signal));
        // The work still runs and may fail (with the same abort): nobody waits for it.
        work.catch(() => {});
        return;
      }
      const entry: Pending = { at: Date.now() + timeoutMs, fail: reject, signal };
      this.#pending.add(entry);
      if (entry.at < this.#armedAt) this.#arm(entry.at);
      let onAbort: (() => void) | undefined;
      if (watchSignal) {
        onAbort = () => {
          this.#pending.delete(entry);
          reject(this.#aborted(signal));
        };
        signal.addEventListener("abort", onAbort, { once: true });
      }
      const settle = () => {
        this.#pending.delete(entry);
        if (onAbort) signal.removeEventListener("abort", onAbort);
      };
      work.then(
        (value) => {
          settle();
          resolve(value);
        },
        (err: unknown) => {
          settle();
          reject(err);
        },
      );
    });
  }

  /** Calls waiting on the sweep (for tests). */
  get size(): number {
    return this.#pending.size;
  }

  #arm(at: number): void {
    clearTimeout(this.#timer);
    this.#armedAt = at;
    this.#timer = setTimeout(() => this.#sweep(), Math.max(0, at - Date.now()));
    // Calls in flight hold their sockets open; the timer alone keeps nothing alive.
    this.#timer.unref();
  }

  #sweep(): void {
    this.#timer = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const entry of this.#pending) {
      if (entry.at <= now) {
        this.#pending.delete(entry);
        entry.fail(this.#expired());
      } else if (entry.signal.aborted) {
        this.#pending.delete(entry);
        entry.fail(this.#aborted(entry.signal));
      } else if (entry.at < next) {
        next = entry.at;
      }
    }
    if (next !== Number.POSITIVE_INFINITY) this.#arm(next);
  }
}
