import { Code, ConnectError } from "@connectrpc/connect";
import { errors } from "../app/errors.js";
import { traceAdmissionWait } from "./admission-trace.js";
import { LatencyLimit } from "./latency-limit.js";

/** How many requests run at once, how many may wait, and when waiting counts as overload. */
export interface AdmissionLimits {
  /** Requests doing work at once: the pool's size, so none waits inside the pool. */
  maxInFlight: number;
  /**
   * Requests that may wait for a slot. A waiter costs memory, not time: it
   * waits until its own deadline or until its client leaves. Beyond, a
   * newcomer is refused at once (or, under a standing queue, the oldest
   * waiter makes room for it).
   */
  maxQueued: number;
  /** CoDel's target (RFC 8289): a wait below this is no queue at all. */
  targetMs: number;
  /**
   * CoDel's interval: once the queue's delay has stayed at `targetMs` or more
   * for this long, the queue stands, and is served newest first.
   */
  intervalMs: number;
  /**
   * Run fewer than `maxInFlight` at once while more would only make each
   * call slower (latency-limit.ts). Off: always up to `maxInFlight`.
   */
  adaptive?: boolean;
}

/**
 * Admission limits for `maxInFlight` calls at once, by default the database
 * pool's size: at most as many calls run as there are connections (so none
 * waits inside the pool, where a cancelled call could not leave), and up to
 * 1,000 wait. Target 5 ms and interval 100 ms are CoDel's and Facebook's
 * values ("Fail at scale"); they only decide the order of service and who is
 * shed once the queue is full, never that a burst the queue can hold is
 * refused: 500 calls at once on 10 slots drain in one to three seconds here,
 * well within their deadlines.
 */
export function admissionLimits(maxInFlight: number, adaptive = false): AdmissionLimits {
  return { maxInFlight, maxQueued: 1000, targetMs: 5, intervalMs: 100, adaptive };
}

/**
 * Under a standing full queue, the longest a waiter keeps its place against
 * newcomers refused at the door: long enough for any burst the queue holds.
 */
export const STANDING_WAIT_MS = 2_000;

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

/** A request waiting for a slot: a node of the queue's doubly linked list. */
interface Waiter {
  /** When it joined the queue (`now()`). */
  since: number;
  /** Its kind of call (`acquire`'s `kind`). */
  kind: string;
  older: Waiter | undefined;
  newer: Waiter | undefined;
  admit: (release: Release) => void;
  reject: (err: ConnectError) => void;
}

/**
 * Admission control: the one owner of "how much work is in flight". At most
 * `maxInFlight` requests run; up to `maxQueued` wait, each until its own
 * deadline or its client leaves (its signal aborts); a newcomer beyond is
 * refused at once with `unavailable`.
 *
 * The queue is served oldest first while it drains now and then. Once it
 * stands (CoDel: its oldest waiter has waited `targetMs` or more, and so for
 * a whole `intervalMs`), it is served newest first (adaptive LIFO, as in
 * Facebook's "Fail at scale"): under sustained overload the newest waiters
 * still have their client and their deadline ahead, and the admitted keep a
 * short wait; and a full queue then sheds its oldest waiter to take the
 * newcomer, instead of refusing the caller most likely to be served in time.
 */
export class Admission {
  #running = 0;
  #queued = 0;
  #oldest: Waiter | undefined;
  #newest: Waiter | undefined;
  #shed = 0;
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
    return this.#queued;
  }

  /** Requests refused since start. */
  get shed(): number {
    return this.#shed;
  }

  /**
   * Refuses a request at once, counting it as shed, if every slot is busy
   * and the queue full: a transport can then answer before reading the
   * request, which under sustained overload is most of what a refusal would
   * cost. A standing queue also sheds its oldest waiter once it has waited
   * `STANDING_WAIT_MS`: served newest first, it would otherwise wait out its
   * whole deadline. False: read the request and call `acquire` as usual.
   */
  refuseIfFull(): boolean {
    if (this.#running < this.limit || this.#queued < this.limits.maxQueued) return false;
    this.#shed++;
    const now = this.now();
    this.#observe(now);
    const oldest = this.#oldest;
    if (oldest !== undefined && now - oldest.since >= STANDING_WAIT_MS && this.standing(now)) {
      this.#shed++;
      oldest.reject(OVERLOADED);
    }
    return true;
  }

  /** Whether the queue stands (see the class): served newest first. */
  standing(now = this.now()): boolean {
    return this.#aboveSince !== undefined && now - this.#aboveSince >= this.limits.intervalMs;
  }

  /**
   * A slot for one request: at once if one is free, else after a wait in
   * the queue. Rejects with `overloaded()` if the queue is full (or the
   * request is shed from it), with the signal's reason (`deadline_exceeded`,
   * `canceled`) if `signal` aborts while waiting.
   */
  acquire(signal?: AbortSignal, kind = ""): Promise<Release> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const now = this.now();
    this.#load?.update(now);
    if (this.#running < this.limit && this.#queued === 0) {
      this.#running++;
      return Promise.resolve(this.#releaser(kind, now));
    }
    this.#load?.press();
    this.#observe(now);
    if (this.#queued >= this.limits.maxQueued) {
      const oldest = this.#oldest;
      if (!this.standing(now) || oldest === undefined) {
        this.#shed++;
        return Promise.reject(OVERLOADED);
      }
      this.#shed++;
      oldest.reject(OVERLOADED);
    }
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        this.#unlink(waiter);
        reject(abortError(signal));
      };
      const waiter: Waiter = {
        since: now,
        kind,
        older: this.#newest,
        newer: undefined,
        admit: (release) => {
          this.#unlink(waiter);
          signal?.removeEventListener("abort", onAbort);
          resolve(release);
        },
        reject: (err) => {
          this.#unlink(waiter);
          signal?.removeEventListener("abort", onAbort);
          reject(err);
        },
      };
      if (this.#newest) this.#newest.newer = waiter;
      else this.#oldest = waiter;
      this.#newest = waiter;
      this.#queued++;
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  #unlink(waiter: Waiter): void {
    if (waiter.older) waiter.older.newer = waiter.newer;
    else if (this.#oldest === waiter) this.#oldest = waiter.newer;
    else return; // not in the queue (any more)
    if (waiter.newer) waiter.newer.older = waiter.older;
    else this.#newest = waiter.older;
    waiter.older = undefined;
    waiter.newer = undefined;
    this.#queued--;
  }

  /** The next waiter to run: oldest first, newest first under a standing queue. */
  #next(now: number): Waiter | undefined {
    this.#observe(now);
    return this.standing(now) ? this.#newest : this.#oldest;
  }

  /**
   * CoDel's measure, the queue's delay: how long its oldest waiter has
   * waited (in FIFO order, the wait of what leaves the queue; in LIFO order
   * the newest leave at once, so their wait would say nothing).
   */
  #observe(now: number): void {
    const oldest = this.#oldest;
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
        const waiter = this.#next(now);
        if (waiter === undefined) return;
        this.#running++;
        waiter.admit(this.#releaser(waiter.kind, now));
      }
    };
  }
}

/**
 * A slot for a call of `kind` that may wait for it until `timeoutMs` has
 * passed (then `deadline_exceeded`) or `signal` aborts (the client left, or
 * its own deadline passed). The timer is made only for a call that will wait.
 */
export function acquireWithin(
  admission: Admission,
  signal: AbortSignal,
  kind: string,
  timeoutMs: number,
): Promise<Release> {
  if (admission.inFlight < admission.limit && admission.queued === 0) {
    return admission.acquire(signal, kind);
  }
  const wait = new AbortController();
  const timer = setTimeout(() => wait.abort(deadlineExceeded()), timeoutMs);
  const onAbort = () => wait.abort(signal.reason);
  signal.addEventListener("abort", onAbort, { once: true });
  const waited = traceAdmissionWait();
  return admission
    .acquire(wait.signal, kind)
    .then(
      (release) => {
        waited(false);
        return release;
      },
      (err: unknown) => {
        waited(true);
        throw err;
      },
    )
    .finally(() => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    });
}

function deadlineExceeded(): ConnectError {
  return new ConnectError("the request took longer than its deadline", Code.DeadlineExceeded);
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
