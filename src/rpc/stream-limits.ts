import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { errors } from "../app/errors.js";
import { shuttingDown } from "../ops/health-service.js";

/**
 * The connection a call came on (an HTTP/2 session, an HTTP/1.1 socket):
 * set by whatever serves the call, for the per-connection caps.
 */
export const connectionKey = createContextKey<object | undefined>(undefined, {
  description: "the call's connection",
});

/** Caps on long-lived streams (health Watch, reflection). */
export interface StreamLimits {
  /** Open at once on one connection. */
  perConnection: number;
  /** Open at once in the process. */
  total: number;
  /** A stream is ended (status OK) after this long; the client opens a new one. */
  lifetimeMs: number;
}

/**
 * A tool or load balancer needs a handful of streams per connection; the total
 * fits the manifest's memory limit, and a finite life keeps a draining replica free.
 */
export const STREAM_LIMITS: StreamLimits = {
  perConnection: 16,
  total: 1000,
  lifetimeMs: 10 * 60_000,
};

/**
 * Caps streaming calls per connection and per process (more get
 * `resource_exhausted`) and ends each after `lifetimeMs`. Unary calls pass through.
 */
export function streamLimitsInterceptor(
  limits: StreamLimits = STREAM_LIMITS,
  drain?: AbortSignal,
): Interceptor {
  const perConnection = new WeakMap<object, number>();
  let total = 0;
  return (next) => async (req) => {
    if (!req.stream) return next(req);
    if (drain?.aborted) throw shuttingDown();
    const connection: object = req.contextValues.get(connectionKey) ?? fallbackConnection;
    const open = perConnection.get(connection) ?? 0;
    if (open >= limits.perConnection || total >= limits.total) {
      throw errors.tooManyStreams();
    }
    perConnection.set(connection, open + 1);
    total++;
    const lifetime = new AbortController();
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      clearTimeout(timer);
      req.signal.removeEventListener("abort", release);
      drain?.removeEventListener("abort", onDrain);
      total--;
      perConnection.set(connection, (perConnection.get(connection) ?? 1) - 1);
    };
    const timer = setTimeout(() => lifetime.abort(), limits.lifetimeMs);
    req.signal.addEventListener("abort", release, { once: true });
    // A drain ends the stream with `unavailable`, after what the handler
    // says at once (a Watch's NOT_SERVING).
    let draining = false;
    const onDrain = () => {
      draining = true;
      setImmediate(() => lifetime.abort());
    };
    drain?.addEventListener("abort", onDrain, { once: true });
    let res: Awaited<ReturnType<typeof next>>;
    try {
      // The handler sees the end of its lifetime as an abort of its signal.
      res = await next({ ...req, signal: AbortSignal.any([req.signal, lifetime.signal]) });
    } catch (err) {
      release();
      throw err;
    }
    if (!res.stream) {
      release();
      return res;
    }
    const messages = res.message[Symbol.asyncIterator]();
    const ended = new Promise<IteratorResult<never>>((resolve) =>
      lifetime.signal.addEventListener("abort", () => resolve({ done: true, value: undefined })),
    );
    return {
      ...res,
      message: (async function* () {
        try {
          for (;;) {
            // A handler waiting for its client (reflection) would not notice the abort.
            const item = await Promise.race([messages.next(), ended]);
            if (item.done && draining) throw shuttingDown();
            if (item.done) return;
            yield item.value;
          }
        } finally {
          release();
          void messages.return?.();
        }
      })(),
    } as typeof res;
  };
}

/** Counts calls whose connection is unknown together. */
const fallbackConnection = {};
