import { Code, ConnectError } from "@connectrpc/connect";
import { errors } from "../domain/errors.js";

/** How many requests run at once and how many may wait for a slot. */
export interface AdmissionLimits {
  /** Requests doing work at once: the pool's size, so none waits inside the pool. */
  maxInFlight: number;
  /** Requests waiting for a slot; beyond, the next one is shed at once. */
  maxQueued: number;
  /** Longest a request waits for a slot before it is shed. */
  maxWaitMs: number;
}

/**
 * Admission limits for `maxInFlight` calls at once, by default the database
 * pool's size: as many calls run as there are connections (so none waits inside the pool, where
 * a cancelled call could not leave), twice as many may wait up to a
 * second, the rest are shed at once.
 */
export function admissionLimits(maxInFlight: number): AdmissionLimits {
  return { maxInFlight, maxQueued: maxInFlight * 2, maxWaitMs: 1000 };
}

/** Seconds a shed client is told to wait (REST `Retry-After`). */
export const RETRY_AFTER_SECONDS = 1;

/** The error of a shed request: `unavailable` (REST 503), safe to retry. */
export function overloaded(): ConnectError {
  return new ConnectError("server overloaded, try again", Code.Unavailable);
}

/** What `acquire` hands back: call once when the request's work is done. */
export type Release = () => void;

interface Waiter {
  admit: (release: Release) => void;
  reject: (err: ConnectError) => void;
}

/**
 * Admission control: the one owner of "how much work is in flight". At most
 * `maxInFlight` requests run; up to `maxQueued` wait (first come, first
 * served) for at most `maxWaitMs`; any more are refused at once with
 * `unavailable` instead of queueing without bound, so callers already
 * admitted keep a bounded latency. A waiter whose signal aborts (client
 * gone, deadline passed) leaves the queue at once.
 */
export class Admission {
  #running = 0;
  readonly #queue = new Set<Waiter>();
  #shed = 0;

  constructor(readonly limits: AdmissionLimits) {}

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
   * A slot for one request: at once if one is free, after a wait if the
   * queue has room, else rejects with `overloaded()`. Rejects with
   * `canceled` if `signal` aborts while waiting.
   */
  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    if (this.#running < this.limits.maxInFlight && this.#queue.size === 0) {
      this.#running++;
      return Promise.resolve(this.#releaser());
    }
    if (this.#queue.size >= this.limits.maxQueued) {
      this.#shed++;
      return Promise.reject(overloaded());
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
        admit: (release) => {
          leave();
          resolve(release);
        },
        reject: (err) => {
          leave();
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        this.#shed++;
        waiter.reject(overloaded());
      }, this.limits.maxWaitMs);
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#queue.add(waiter);
    });
  }

  #releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#queue.values().next();
      // The slot passes straight to the first waiter: the count stays the same.
      if (!next.done) next.value.admit(this.#releaser());
      else this.#running--;
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
