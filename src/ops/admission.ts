import { Code, ConnectError } from "@connectrpc/connect";
import { errors } from "../app/errors.js";
import { LatencyLimit } from "./latency-limit.js";

/** How many requests run at once and how long the others may wait for a slot. */
export interface AdmissionLimits {
  /** Requests doing work at once: the pool's size, so none waits inside the pool. */
  maxInFlight: number;
  /**
   * Requests waiting for a slot (scaled down with an adaptive limit: waiters
   * for 3 slots wait as long as for 10); beyond, the next one is shed at once.
   */
  maxQueued: number;
  /**
   * Longest a request waits for a slot while the queue drains now and then:
   * room for a burst.
   */
  maxWaitMs: number;
  /**
   * Longest a request waits under sustained overload: once the queue has not
   * been empty for `maxWaitMs` (a standing queue), or while requests were
   * shed within the last `maxWaitMs` (load in bursts empties the queue
   * between them). Waiting longer would only add latency to every admitted
   * call, so the excess is shed.
   */
  overloadWaitMs: number;
  /**
   * Run fewer than `maxInFlight` at once while more would only make each
   * call slower (latency-limit.ts). Off: always up to `maxInFlight`.
   */
  adaptive?: boolean;
}

/**
 * Admission limits for `maxInFlight` calls at once, by default the database
 * pool's size: at most as many calls run as there are connections (so none
 * waits inside the pool, where a cancelled call could not leave), fewer while
 * more would only make each slower (latency-limit.ts), twice as many may
 * wait: up to 100 ms for a burst, 5 ms under sustained overload (the
 * "controlled delay" queue of Facebook's "Fail at scale"), the rest are shed
 * at once.
 */
export function admissionLimits(maxInFlight: number, adaptive = false): AdmissionLimits {
  return {
    maxInFlight,
    maxQueued: maxInFlight * 2,
    maxWaitMs: 100,
    overloadWaitMs: 5,
    adaptive,
  };
}

/** Seconds a shed client is told to wait (REST `Retry-After`). */
export const RETRY_AFTER_SECONDS = 1;

/**
 * The error of a shed request: `unavailable` (REST 503), safe to retry. One
 * instance for every refusal: under overload most requests are refused, and
 * a new error each time would capture a stack trace nobody reads.
 */
const OVERLOADED = new ConnectError("server overloaded, try again", Code.Unavailable);

/** The error of a shed request (the one instance, see above). */
export function overloaded(): ConnectError {
  return OVERLOADED;
}

/**
 * What `acquire` hands back: call once when the request's work is done, with
 * `succeeded` false when it failed: a failure may be quick for reasons of its
 * own (a bad token, a missing quiz), so its time says nothing about load and
 * is left out of the adaptive limit's samples.
 */
export type Release = (succeeded?: boolean) => void;

interface Waiter {
  /** When it joined the queue (`now()`). */
  since: number;
  /** Its kind of call (`acquire`'s `kind`). */
  kind: string;
  admit: (release: Release) => void;
  reject: (err: ConnectError) => void;
}

/**
 * Admission control: the one owner of "how much work is in flight". At most
 * `maxInFlight` requests run; up to `maxQueued` wait (first come, first
 * served) instead of queueing without bound, and any more are refused at once
 * with `unavailable`, so that callers already admitted keep a bounded latency.
 * How long a waiter may wait depends on the queue (controlled delay): while it
 * empties now and then (a burst) up to `maxWaitMs`; once it has stayed
 * non-empty for `maxWaitMs`, or while others are being shed (sustained
 * overload), only `overloadWaitMs`, both
 * for newcomers and for waiters already queued, which are shed when a slot
 * frees if they have waited longer. A waiter whose signal aborts (client
 * gone, deadline passed) leaves the queue at once.
 */
export class Admission {
  #running = 0;
  readonly #queue = new Set<Waiter>();
  #shed = 0;
  /** When the queue was last seen empty. */
  #lastEmpty: number;
  /** When a request was last shed. */
  #lastShed = Number.NEGATIVE_INFINITY;
  /** The adaptive limit under `maxInFlight`, if `limits.adaptive`. */
  readonly #load: LatencyLimit | undefined;

  /**
   * `now` is a monotonic clock in ms; `loopBusy`, for the adaptive limit, the
   * event loop's utilization since its last call (tests pass their own).
   */
  constructor(
    readonly limits: AdmissionLimits,
    private readonly now: () => number = () => performance.now(),
    loopBusy?: () => number,
  ) {
    this.#lastEmpty = now();
    this.#load = limits.adaptive
      ? new LatencyLimit(limits.maxInFlight, now(), loopBusy)
      : undefined;
  }

  /** Requests that may run at once now. */
  get limit(): number {
    return this.#load?.value ?? this.limits.maxInFlight;
  }

  /** Requests running now. */
  get inFlight(): number {
    return this.#running;
  }

  /** Requests waiting for a slot now. */
  get queued(): number {
    return this.#queue.size;
  }

  /** Requests refused since start. */
  get shed(): number {
    return this.#shed;
  }

  /**
   * Refuses a request at once if it would be refused anyway (every slot
   * busy, the queue full), counting it as shed: lets a transport answer
   * before decoding anything. False: call `acquire` as usual.
   */
  shedIfFull(): boolean {
    this.#load?.update(this.now());
    if (this.#running < this.limit || this.#queue.size < this.#queueRoom()) return false;
    this.#load?.press();
    this.#refused(this.now());
    return true;
  }

  /** Counts a refusal at `now`. */
  #refused(now: number): void {
    this.#shed++;
    this.#lastShed = now;
  }

  /** How many may wait now: `maxQueued`, in proportion to the adaptive limit. */
  #queueRoom(): number {
    const { maxQueued, maxInFlight } = this.limits;
    return this.#load ? Math.ceil((maxQueued * this.#load.value) / maxInFlight) : maxQueued;
  }

  /**
   * How long a waiter may wait now: short once the queue has stood for
   * `maxWaitMs` or while requests are being shed.
   */
  #waitLimit(now: number): number {
    if (this.#queue.size === 0) this.#lastEmpty = now;
    const { maxWaitMs, overloadWaitMs } = this.limits;
    const overload = now - this.#lastEmpty > maxWaitMs || now - this.#lastShed < maxWaitMs;
    return overload ? overloadWaitMs : maxWaitMs;
  }

  /**
   * A slot for one request: at once if one is free, after a wait if the
   * queue has room, else rejects with `overloaded()`. Rejects with
   * `canceled` if `signal` aborts while waiting.
   */
  acquire(signal?: AbortSignal, kind = ""): Promise<Release> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const now = this.now();
    this.#load?.update(now);
    if (this.#running < this.limit && this.#queue.size === 0) {
      this.#running++;
      return Promise.resolve(this.#releaser(kind, now));
    }
    this.#load?.press();
    const waitMs = this.#waitLimit(now);
    if (this.#queue.size >= this.#queueRoom()) {
      this.#refused(now);
      return Promise.reject(OVERLOADED);
    }
    return new Promise<Release>((resolve, reject) => {
      const leave = () => {
        this.#queue.delete(waiter);
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      const onAbort = () => {
        leave();
        reject(abortError(signal));
      };
      const waiter: Waiter = {
        since: now,
        kind,
        admit: (release) => {
          leave();
          resolve(release);
        },
        reject: (err) => {
          leave();
          reject(err);
        },
      };
      const timer = setTimeout(() => this.#shedWaiter(waiter), waitMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#queue.add(waiter);
    });
  }

  #shedWaiter(waiter: Waiter): void {
    this.#refused(this.now());
    waiter.reject(OVERLOADED);
  }

  /** The release of a slot taken at `since` by a call of `kind`. */
  #releaser(kind: string, since: number): Release {
    let released = false;
    return (succeeded = true) => {
      if (released) return;
      released = true;
      this.#running--;
      const now = this.now();
      if (succeeded) this.#load?.sample(kind, now - since);
      this.#load?.update(now);
      const waitLimit = this.#waitLimit(now);
      for (const waiter of this.#queue) {
        if (this.#running >= this.limit) return;
        // Queued under a burst's limit but overload has set in since: it
        // would run late, so it is shed and the slot goes to a newer one.
        if (now - waiter.since > waitLimit) {
          this.#shedWaiter(waiter);
          continue;
        }
        this.#running++;
        waiter.admit(this.#releaser(waiter.kind, now));
      }
    };
  }
}

/**
 * Why a wait ended early: the signal's own ConnectError (Connect aborts a
 * call's signal with `deadline_exceeded` when the client's deadline passes),
 * else `canceled` (the client left).
 */
export function abortError(signal: AbortSignal | undefined): ConnectError {
  const reason: unknown = signal?.reason;
  return reason instanceof ConnectError ? reason : errors.canceled();
}
