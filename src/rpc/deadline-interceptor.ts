import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/**
 * Ends a unary call with `deadline_exceeded` once `timeoutMs` has passed, or
 * once the client's own deadline (`grpc-timeout`, `connect-timeout-ms`) has,
 * whichever comes first. Connect only aborts `req.signal` at the client's
 * deadline; a handler blocked on the database would still answer late, after
 * the client gave up, holding the caller's slot. The handler's work may go on
 * after the answer; its result is dropped. Streams are left alone: a health
 * Watch or a reflection conversation lasts as long as its client wants.
 */
export function deadlineInterceptor(timeoutMs: number): Interceptor {
  return (next) => (req) => {
    if (req.stream) return next(req);
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(exceeded()), timeoutMs);
      onAbort = () => reject(ConnectError.from(req.signal.reason ?? exceeded()));
      if (req.signal.aborted) onAbort();
      else req.signal.addEventListener("abort", onAbort, { once: true });
    });
    return Promise.race([next(req), deadline]).finally(() => {
      clearTimeout(timer);
      if (onAbort) req.signal.removeEventListener("abort", onAbort);
    });
  };
}

function exceeded(): ConnectError {
  return new ConnectError("the request took longer than its deadline", Code.DeadlineExceeded);
}
