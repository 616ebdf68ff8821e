import { ConnectError } from "@connectrpc/connect";
import { errors } from "../app/errors.js";
import type { AdmissionConfig } from "../config.js";
import { traceAdmissionWait } from "./admission-trace.js";
import { type Entry, FairQueue } from "./fair-queue.js";
import { LatencyLimit } from "./latency-limit.js";

/**
 * How many requests run at once, how many may wait, and when waiting counts as
 * overload: the settings of config.ts (`admissionConfig`).
 */
export type AdmissionLimits = AdmissionConfig;

/**
 * The error of a shed request: `unavailable` (REST 503), safe to retry. One
 * instance for every refusal: under overload most requests are refused, and
 * a new error each time would capture a stack trace nobody reads.
 */
const OVERLOADED = errors.overloaded();

/** The error of a request over its caller's share: `resource_exhausted` (REST 429), one instance. */
const OVER_SHARE = errors.overShare();

/**
 * What `acquire` hands back: call once when the request's work is done, with
 * `succeeded` false when it failed: a failure may be quick for reasons of its
 * own (a bad token, a missing quiz), so its time says nothing about load and
 * is left out of the adaptive limit's samples.
 */
export type Release = (succeeded?: boolean) => void;

/** A request waiting for a slot: its kind of call (`acquire`'s `kind`) and how it is answered. */
interface Waiter {
  kind: string;
  admit: (release: Release) => void;
  reject: (err: ConnectError) => void;
}

/** How one request is admitted: its kind (for the adaptive limit), its caller, and its signal. */
export interface Slot {
  /** Aborts when the request's deadline passes or its client leaves: then it stops waiting. */
  signal?: AbortSignal;
  kind?: string;
  /** The caller: the token's user, or the client's address; "" for none (no share applies). */
  key?: string;
  /**
   * Whether the call's connection can take an answer now: undefined if so,
   * else a promise of when it can. Given a slot while it cannot, the call
   * gives the slot back and waits for it again once the promise settles.
   */
  room?: () => Promise<void> | undefined;
}

/**
 * Admission control: the one owner of "how much work is in flight". At most `maxInFlight`
 * requests run; others wait, each until its own deadline or its client leaves, served across
 * callers in turn; its order and its one shedding rule: docs/decisions.md.
 */
export class Admission {
  #running = 0;
  /** Waiting requests, per caller, served across callers in turn. */
  readonly #queue = new FairQueue<Waiter>();
  #admitted = 0;
  #waited = 0;
  #shed = 0;
  #overShare = 0;
  /** Since when the queue's delay has been `targetMs` or more; undefined: it is not. */
  #aboveSince: number | undefined;
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

  /** Requests given a slot since start. */
  get admitted(): number {
    return this.#admitted;
  }

  /** Requests that waited for their slot (or their refusal) since start. */
  get waited(): number {
    return this.#waited;
  }

  /** Requests refused (`unavailable`) since start: at the door, in the queue, or shed from it. */
  get shed(): number {
    return this.#shed;
  }

  /** Requests refused for being over their caller's share (`resource_exhausted`) since start. */
  get refusedOverShare(): number {
    return this.#overShare;
  }

  /**
   * Before a request is read (the door): the error to refuse it with at once
   * (counted), or undefined to read it and `acquire` as usual. Under
   * sustained overload, reading and decoding the request is most of what a
   * refusal would cost.
   */
  refusalBeforeRead(key = ""): ConnectError | undefined {
    if (this.#running < this.limit && this.#queue.size === 0) return undefined;
    const now = this.now();
    this.#observe(now);
    const refusal = this.#refusal(key, now);
    if (refusal === OVER_SHARE) this.#overShare++;
    else if (refusal !== undefined) this.#shed++;
    return refusal;
  }

  /** Whether the queue stands (see the class): served newest first. */
  standing(now = this.now()): boolean {
    return this.#aboveSince !== undefined && now - this.#aboveSince >= this.limits.intervalMs;
  }

  /**
   * A slot for one request: at once if one is free, else after a wait in
   * the queue. Rejects with `overShare()` or `overloaded()` as the class
   * says, with the signal's reason (`deadline_exceeded`, `canceled`) if
   * `signal` aborts while waiting.
   */
  acquire(signal?: AbortSignal, kind = "", key = ""): Promise<Release> {
    const got = this.#acquire(signal, kind, key);
    return got instanceof Promise ? got : Promise.resolve(got);
  }

  /** `acquire`, with a free slot's release handed back at once (no promise, no turn). */
  #acquire(signal: AbortSignal | undefined, kind: string, key: string): Release | Promise<Release> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const now = this.now();
    this.#load?.update(now);
    if (this.#running < this.limit && this.#queue.size === 0) {
      this.#running++;
      this.#admitted++;
      return this.#releaser(kind, now);
    }
    this.#load?.press();
    this.#observe(now);
    this.#waited++;
    const refusal = this.#refusal(key, now);
    if (refusal === OVER_SHARE) {
      this.#overShare++;
      return Promise.reject(refusal);
    }
    if (refusal !== undefined) {
      this.#shed++;
      return Promise.reject(refusal);
    }
    if (this.#queue.size >= this.limits.maxQueued) this.#shedOne(key, now);
    // The wait, as an event on the call's span when tracing is on.
    const waited = traceAdmissionWait();
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        this.#queue.remove(entry);
        waited(true);
        reject(abortError(signal));
      };
      const entry = this.#queue.add(key, now, {
        kind,
        admit: (release) => {
          signal?.removeEventListener("abort", onAbort);
          waited(false);
          resolve(release);
        },
        reject: (err) => {
          this.#queue.remove(entry);
          signal?.removeEventListener("abort", onAbort);
          waited(true);
          reject(err);
        },
      });
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /**
   * Runs `work` in a slot of its own: waits for the slot (see `acquire`),
   * and holds it until the work has stopped, however the request ends. If
   * `slot.signal` aborts first (the deadline, or the client left), the
   * returned promise rejects at once with its reason, so the answer is not
   * late, while the slot stays taken until `work`, which has the same
   * signal, has actually stopped.
   */
  run<T>(slot: Slot, work: () => Promise<T>): Promise<T> {
    const got = this.#acquire(slot.signal, slot.kind ?? "", slot.key ?? "");
    if (got instanceof Promise || slot.room?.() !== undefined)
      return this.#runLater(slot, got, work);
    return this.#runIn(got, slot.signal, work);
  }

  /** `run` for a call that waited for its slot, or whose connection has no room yet. */
  async #runLater<T>(
    slot: Slot,
    got: Release | Promise<Release>,
    work: () => Promise<T>,
  ): Promise<T> {
    const { signal } = slot;
    let release = await got;
    // No answer is computed for a connection that cannot take it: the slot goes to another call.
    for (let room = slot.room?.(); room !== undefined; room = slot.room?.()) {
      release(false);
      await untilAborted(room, signal);
      release = await this.acquire(signal, slot.kind, slot.key);
    }
    return this.#runIn(release, signal, work);
  }

  /** Runs `work` in the slot `release` gives back once it has stopped; see `run`. */
  #runIn<T>(release: Release, signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
    let running: Promise<T>;
    try {
      if (signal?.aborted) throw abortError(signal);
      running = work();
    } catch (err) {
      release(false);
      return Promise.reject(err);
    }
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(abortError(signal));
      signal?.addEventListener("abort", onAbort, { once: true });
      running.then(
        (result) => {
          signal?.removeEventListener("abort", onAbort);
          release(true);
          resolve(result);
        },
        (err: unknown) => {
          signal?.removeEventListener("abort", onAbort);
          release(false);
          reject(err);
        },
      );
    });
  }

  /** Why a newcomer of `key` that must wait is refused, if it is. */
  #refusal(key: string, now: number): ConnectError | undefined {
    if (key !== "" && this.#queue.countOf(key) >= this.limits.maxQueuedPerUser) return OVER_SHARE;
    if (this.#queue.size < this.limits.maxQueued) return undefined;
    return this.#victim(key, now) === undefined ? OVERLOADED : undefined;
  }

  /** The waiting request the shedding rule (see the class) would shed for a newcomer of `key`. */
  #victim(key: string, now: number): Entry<Waiter> | undefined {
    const longest = this.#queue.longest();
    if (
      longest !== undefined &&
      longest.key !== key &&
      longest.count > this.#queue.countOf(key) + 1
    ) {
      return longest.oldest;
    }
    const oldest = this.#queue.oldest;
    if (
      oldest !== undefined &&
      now - oldest.since >= this.limits.standingWaitMs &&
      this.standing(now)
    ) {
      return oldest;
    }
    return undefined;
  }

  #shedOne(key: string, now: number): void {
    const victim = this.#victim(key, now);
    if (victim === undefined) return;
    this.#shed++;
    victim.item.reject(OVERLOADED);
  }

  /**
   * CoDel's measure, the queue's delay: how long its oldest waiter has
   * waited (in FIFO order, the wait of what leaves the queue; in LIFO order
   * the newest leave at once, so their wait would say nothing).
   */
  #observe(now: number): void {
    const oldest = this.#queue.oldest;
    if (oldest === undefined || now - oldest.since < this.limits.targetMs) {
      this.#aboveSince = undefined;
    } else {
      this.#aboveSince ??= oldest.since + this.limits.targetMs;
    }
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
      while (this.#running < this.limit) {
        this.#observe(now);
        const waiter = this.#queue.take(this.standing(now))?.item;
        if (waiter === undefined) return;
        this.#running++;
        this.#admitted++;
        waiter.admit(this.#releaser(waiter.kind, now));
      }
    };
  }
}

/** Resolves when `promise` settles or `signal` aborts, whichever is first. */
function untilAborted(promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return promise;
  return new Promise<void>((resolve) => {
    const done = () => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    if (signal.aborted) return done();
    signal.addEventListener("abort", done, { once: true });
    promise.then(done, done);
  });
}

/**
 * Why a wait ended early: the signal's own ConnectError (a deadline passed:
 * `deadline_exceeded`), else `canceled` (the client left).
 */
function abortError(signal: AbortSignal | undefined): ConnectError {
  const reason: unknown = signal?.reason;
  return reason instanceof ConnectError ? reason : errors.canceled();
}
