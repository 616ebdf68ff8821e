import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { type Admission, abortError, acquireWithin } from "../ops/admission.js";

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
 * control gives it a slot. Put it last, after the deadline and the token
 * check: by then Connect has read and size-checked the whole request, so a
 * slot counts work, never a slow sender or a caller without a token. A call
 * waits for its slot until `timeoutMs` (the server's deadline) or its own
 * deadline passes, or its client leaves; a stream the client reset never
 * reaches the handler (nor the database). Streams are not admitted here.
 */
export function admissionInterceptor(admission: Admission, timeoutMs: number): Interceptor {
  return (next) => async (req) => {
    if (req.stream) return next(req);
    const clientGone = req.contextValues.get(clientGoneKey);
    const gone = () => req.signal.aborted || clientGone();
    // The signal says why (a deadline already passed, or the client left).
    if (gone()) throw abortError(req.signal);
    const release = await acquireWithin(admission, req.signal, req.method.name, timeoutMs);
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
