/** How often the limit is re-evaluated, and the fewest samples that count. */
const WINDOW_MS = 100;
const MIN_SAMPLES = 5;
/** Mean slowdown over each kind of call's fastest time above which fewer may run. */
const TOLERANCE = 2;
/** How long a kind of call's fastest time is remembered (two periods: between 10 and 20 s). */
const MIN_PERIOD_MS = 10_000;

/** The fastest time of one kind of call: this period's and the last one's. */
interface Fastest {
  current: number;
  previous: number;
}

/**
 * How many calls may run at once, adapted to the time they take (a
 * gradient limiter, as in Netflix's concurrency-limits): at most `max` (the
 * pool's size); 10% fewer each window in which calls took on average more
 * than twice the fastest time seen for their kind (procedure) lately, one
 * more each window in which they did not while the limit turned calls away.
 *
 * Why: when Node's CPU, not the pool, is the bottleneck, every call admitted
 * shares the CPU with the others, so more calls at once only make each one
 * slower: a fixed limit of 10 gave admitted calls ten times their unloaded
 * latency at the same goodput as 3. When the database is the bottleneck,
 * calls take no longer with more of them in flight (up to the pool's size),
 * and the limit stays at `max`.
 */
export class LatencyLimit {
  #limit: number;
  #windowStart: number;
  #periodStart: number;
  #pressed = false;
  #slowdown = 0;
  #samples = 0;
  readonly #fastest = new Map<string, Fastest>();

  constructor(
    readonly max: number,
    now: number,
  ) {
    this.#limit = max;
    this.#windowStart = now;
    this.#periodStart = now;
  }

  /** Calls that may run at once now. */
  get value(): number {
    return this.#limit;
  }

  /** The limit turned a call away (it had to wait, or was refused). */
  press(): void {
    this.#pressed = true;
  }

  /** A call of kind `key` took `ms` from admission to release. */
  sample(key: string, ms: number): void {
    let fastest = this.#fastest.get(key);
    // New, or unseen for two periods: this call sets its kind's fastest time.
    if (fastest === undefined || fastest.previous === Number.POSITIVE_INFINITY) {
      fastest = { current: ms, previous: ms };
      this.#fastest.set(key, fastest);
    }
    if (ms < fastest.current) fastest.current = ms;
    const floor = Math.max(Math.min(fastest.current, fastest.previous), 0.05);
    this.#slowdown += ms / floor;
    this.#samples++;
  }

  /** Re-evaluates the limit once a window has passed. */
  update(now: number): void {
    if (now - this.#windowStart < WINDOW_MS) return;
    if (now - this.#periodStart >= MIN_PERIOD_MS) {
      this.#periodStart = now;
      for (const f of this.#fastest.values()) {
        f.previous = f.current;
        f.current = Number.POSITIVE_INFINITY;
      }
    }
    if (this.#samples < MIN_SAMPLES) return;
    const slowdown = this.#slowdown / this.#samples;
    if (slowdown > TOLERANCE) {
      this.#limit = Math.max(1, Math.floor(this.#limit * 0.9));
    } else if (this.#pressed) {
      this.#limit = Math.min(this.max, this.#limit + 1);
    }
    this.#windowStart = now;
    this.#pressed = false;
    this.#slowdown = 0;
    this.#samples = 0;
  }
}
