import { performance } from "node:perf_hooks";

/** How often the limit is re-evaluated, and the fewest samples that count. */
const WINDOW_MS = 100;
const MIN_SAMPLES = 5;
/** Mean slowdown over each kind of call's usual time above which fewer may run. */
const TOLERANCE = 2;
/** The fewest calls let run at once: fewer would idle the CPU while calls wait on the database. */
const MIN_LIMIT = 3;
/**
 * The event loop's utilization under which slow calls are not the CPU's
 * doing: the limit does not shrink then.
 */
const BUSY_LOOP = 0.85;
/** How long a kind of call's usual time is remembered (two periods: between 10 and 20 s). */
const PERIOD_MS = 10_000;

/** The event loop's utilization (0 to 1) since the previous call of the returned function. */
function loopUtilization(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const current = performance.eventLoopUtilization();
    const since = performance.eventLoopUtilization(current, last);
    last = current;
    return since.utilization;
  };
}

/** One kind of call: its time in this window, and its best window mean this period and the last. */
interface Kind {
  sum: number;
  count: number;
  current: number;
  previous: number;
}

/**
 * How many calls may run at once, adapted to the time they take (a gradient limiter, as in
 * Netflix's concurrency-limits), between 3 and the pool's size: docs/decisions.md says why.
 */
export class LatencyLimit {
  #limit: number;
  #windowStart: number;
  #periodStart: number;
  #pressed = false;
  readonly #kinds = new Map<string, Kind>();

  /** `loopBusy`: the event loop's utilization since its last call (tests pass their own). */
  constructor(
    readonly max: number,
    now: number,
    private readonly loopBusy: () => number = loopUtilization(),
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
    let kind = this.#kinds.get(key);
    if (kind === undefined) {
      kind = { sum: 0, count: 0, current: Infinity, previous: Infinity };
      this.#kinds.set(key, kind);
    }
    kind.sum += ms;
    kind.count++;
  }

  /** Re-evaluates the limit once a window has passed. */
  update(now: number): void {
    if (now - this.#windowStart < WINDOW_MS) return;
    const newPeriod = now - this.#periodStart >= PERIOD_MS;
    if (newPeriod) this.#periodStart = now;
    let slowdown = 0;
    let samples = 0;
    for (const kind of this.#kinds.values()) {
      if (kind.count > 0) {
        const mean = kind.sum / kind.count;
        const usual = Math.min(kind.current, kind.previous);
        // A kind seen for the first time (or not for two periods) sets its usual time.
        slowdown += kind.count * (Number.isFinite(usual) ? mean / Math.max(usual, 0.05) : 1);
        samples += kind.count;
        if (mean < kind.current) kind.current = mean;
      }
      kind.sum = 0;
      kind.count = 0;
      if (newPeriod) {
        kind.previous = kind.current;
        kind.current = Infinity;
      }
    }
    this.#windowStart = now;
    const cpuBound = this.loopBusy() >= BUSY_LOOP;
    if (samples < MIN_SAMPLES) return;
    if (cpuBound && slowdown / samples > TOLERANCE) {
      this.#limit = Math.max(Math.min(MIN_LIMIT, this.max), Math.floor(this.#limit * 0.9));
    } else if (this.#pressed) {
      this.#limit = Math.min(this.max, this.#limit + 1);
    }
    this.#pressed = false;
  }
}
