import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { DeadlineSweep } from "./deadline-sweep.js";

/**
 * True when the call's signal aborts only because the client went away (no
 * client deadline, so no answer is awaited at a set time): the unary short
 * paths set it (unary-call.ts). Then the deadline needs no abort listener of
 * its own per call. Connect's own handler leaves it false.
 */
export const abortMeansGoneKey = createContextKey<boolean>(false, {
  description: "the call's signal aborts only when the client goes away",
});

/**
 * Ends a unary call with `deadline_exceeded` once `timeoutMs` has passed, or
 * once the client's own deadline (`grpc-timeout`, `connect-timeout-ms`) has,
 * whichever comes first. Connect only aborts `req.signal` at the client's
 * deadline; a handler blocked on the database would still answer late, after
 * the client gave up, holding the caller's slot. The handler's work may go on
 * after the answer; its result is dropped. Streams are left alone: a health
 * Watch or a reflection conversation lasts as long as its client wants.
 *
 * One timer serves every call (deadline-sweep.ts). A call whose client went
 * away is ended at the sweep's next pass rather than at once: nobody waits
 * for that answer, and the handler's slot is held until it returns anyway.
 */
export function deadlineInterceptor(timeoutMs: number): Interceptor {
  const sweep = new DeadlineSweep(exceeded, (signal) =>
    ConnectError.from(signal.reason ?? exceeded()),
  );
  return (next) => (req) => {
    if (req.stream) return next(req);
    const watchSignal = !req.contextValues.get(abortMeansGoneKey);
    return sweep.race(next(req), timeoutMs, req.signal, watchSignal);
  };
}

function exceeded(): ConnectError {
  return new ConnectError("the request took longer than its deadline", Code.DeadlineExceeded);
}
