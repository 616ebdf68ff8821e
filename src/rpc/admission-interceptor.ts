import type { Interceptor } from "@connectrpc/connect";
import { type Admission, abortError } from "../ops/admission.js";
import { clientGone } from "../ops/client-gone.js";
import { fastifyRequestKey } from "./outcome-interceptor.js";

/**
 * Runs a unary call only if its client is still there and admission
 * control gives it a slot: a stream the client reset before its handler
 * started never reaches the handler (nor the database), and a call over
 * the limit is refused at once with `unavailable`. The slot is held until
 * the handler really finishes, so put this inside the deadline interceptor.
 */
export function admissionInterceptor(admission: Admission): Interceptor {
  return (next) => async (req) => {
    const request = req.contextValues.get(fastifyRequestKey);
    const gone = () => req.signal.aborted || (request !== undefined && clientGone(request.raw));
    // The signal says why (a deadline already passed, or the client left).
    if (gone()) throw abortError(req.signal);
    const release = await admission.acquire(req.signal);
    try {
      // It may have left while waiting for its slot.
      if (gone()) throw abortError(req.signal);
      return await next(req);
    } finally {
      release();
    }
  };
}
