import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { type Admission, abortError } from "../ops/admission.js";

/**
 * Whether the call's client has already gone (its stream reset or closed,
 * its connection closed): set by server.ts, which knows the stream. An
 * abort signal alone may not tell yet.
 */
export const clientGoneKey = createContextKey<() => boolean>(() => false, {
  description: "whether the call's client has gone",
});

/**
 * Runs a unary call only if its client is still there and admission
 * control gives it a slot: a stream the client reset before its handler
 * started never reaches the handler (nor the database), and a call over
 * the limit is refused at once with `unavailable`. The slot is held until
 * the handler really finishes, so put this inside the deadline interceptor.
 */
export function admissionInterceptor(admission: Admission): Interceptor {
  return (next) => async (req) => {
    const clientGone = req.contextValues.get(clientGoneKey);
    const gone = () => req.signal.aborted || clientGone();
    // The signal says why (a deadline already passed, or the client left).
    if (gone()) throw abortError(req.signal);
    const release = await admission.acquire(req.signal, req.method.name);
    let succeeded = false;
    try {
      // It may have left while waiting for its slot.
      if (gone()) throw abortError(req.signal);
      const res = await next(req);
      succeeded = true;
      return res;
    } finally {
      release(succeeded);
    }
  };
}
