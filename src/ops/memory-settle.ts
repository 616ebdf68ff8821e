import { totalmem } from "node:os";
import { performance } from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

/** How often memory is looked at. */
const LOOK_EVERY_MS = 10_000;

/** The event loop's busy share under which the service counts as quiet. */
const QUIET_UTILIZATION = 0.05;

/**
 * Looks in a row the service must have been quiet for before a collection:
 * half a minute. A last-resort collection keeps none of V8's optimized code
 * (it lets go of the object shapes that code was built on), so a replica
 * between bursts of ordinary traffic would serve each burst cold again.
 */
const QUIET_LOOKS = 3;

/** Growth of RSS over the quiet footprint worth a collection: a quarter, and at least this much. */
const GROWTH = 1.25;
const GROWTH_MIN_BYTES = 16 * 1024 * 1024;

/**
 * The share of the process's memory limit RSS must hold before a collection
 * is worth its cost: far below its limit, a grown heap harms no one, and
 * the collection would cost the next call its warm code for nothing.
 */
const LIMIT_SHARE = 0.25;

/**
 * Gives memory back once the service is quiet after it grew. A flood of
 * connections leaves their sessions as garbage, and V8 collects only as it
 * allocates, which an idle service does not; what it does collect it keeps
 * as pooled pages for the next burst (200 MB of them after three floods),
 * and the native memory dead sessions hold (nghttp2's) goes only with them.
 * Every LOOK_EVERY_MS, if the event loop has been nearly idle for
 * QUIET_LOOKS looks and RSS stands a quarter above the least it has been
 * while quiet (and above what the last collection left, and LIMIT_SHARE of
 * the memory limit), one last-resort collection: V8's, which also returns
 * its pooled pages. Under load, and between bursts, V8 manages its heap
 * itself. What the allocator returns of freed native memory is its own
 * business: the container's returns freed pages within a second
 * (Dockerfile).
 */
export class MemorySettle {
  #timer: NodeJS.Timeout | undefined;
  /** The least RSS seen while quiet: the service's own footprint. */
  #floor: number;
  /** What the last collection left, measured at the first quiet look after it. */
  #left: number | undefined;
  #collected = false;
  /** Quiet looks in a row. */
  #quiet = 0;
  readonly #rss: () => number;
  readonly #busy: () => number;
  readonly #collect: () => void;
  readonly #limit: number;

  /** Collections made since start. */
  collections = 0;

  /** The process's own measures unless a test gives others. */
  constructor(
    measures: {
      rss?: () => number;
      busy?: () => number;
      collect?: () => void;
      /** Bytes the process may use. */
      limit?: number;
    } = {},
  ) {
    this.#rss = measures.rss ?? (() => process.memoryUsage.rss());
    this.#busy = measures.busy ?? loopBusy();
    this.#collect = measures.collect ?? lastResortGc;
    this.#limit = measures.limit ?? memoryLimit();
    this.#floor = this.#rss();
  }

  start(): void {
    this.#timer ??= setInterval(() => this.look(), LOOK_EVERY_MS).unref();
  }

  /** One look (every LOOK_EVERY_MS; tests may call it). */
  look(): void {
    if (this.#busy() >= QUIET_UTILIZATION) {
      this.#quiet = 0;
      return;
    }
    this.#quiet++;
    const rss = this.#rss();
    this.#floor = Math.min(this.#floor, rss);
    if (this.#collected) {
      this.#collected = false;
      this.#left = rss;
    }
    const over = Math.max(
      this.#floor * GROWTH,
      (this.#left ?? 0) + GROWTH_MIN_BYTES,
      this.#limit * LIMIT_SHARE,
    );
    if (rss < over || this.#quiet < QUIET_LOOKS) return;
    this.#collect();
    this.collections++;
    this.#collected = true;
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/** The container's memory limit (cgroup), or the machine's memory where there is none. */
function memoryLimit(): number {
  const constrained = process.constrainedMemory();
  return constrained > 0 ? Math.min(constrained, totalmem()) : totalmem();
}

/** The event loop's busy share since the last call. */
function loopBusy(): () => number {
  let last = performance.eventLoopUtilization();
  return () => {
    const since = performance.eventLoopUtilization(last);
    last = performance.eventLoopUtilization();
    return since.utilization;
  };
}

type Gc = (options?: { type: "major"; execution: "sync"; flavor: "last-resort" }) => void;
let gc = (globalThis as { gc?: Gc }).gc;

/**
 * V8's last-resort collection (every space, then its pooled pages given
 * back). Node exposes `gc` only with `--expose-gc`; setting that flag at run
 * time exposes it to contexts made afterwards, so one is made to fetch it
 * (the service never depends on a start flag). Only once a collection is
 * due: fetched at start, it set V8's memory reducer running memory-reducing
 * collections after every quiet spell, each dropping the optimized code.
 */
function lastResortGc(): void {
  if (gc === undefined) {
    setFlagsFromString("--expose-gc");
    gc = runInNewContext("gc") as Gc;
  }
  gc({ type: "major", execution: "sync", flavor: "last-resort" });
}
