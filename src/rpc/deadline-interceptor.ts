import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";

/**
 * Ends a unary call with `deadline_exceeded` at `timeoutMs` or the client's own
 * deadline, whichever comes first: Connect only aborts `req.signal`, and a
 * handler blocked on the database would answer late. Streams are left alone.
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
