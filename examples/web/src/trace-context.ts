import type { Interceptor } from "@connectrpc/connect";

/**
 * W3C Trace Context for the page's calls: each call carries a `traceparent`,
 * and every call from one interaction of the learner (a click, a key, a form
 * sent) shares one trace id, so a click and what it caused on the service,
 * its database and its events, read as one trace. The page is the trace's
 * root and marks it sampled; it exports no spans of its own (each call's
 * span id names the page's side of that call).
 */
export function traceContextInterceptor(
  // The page's document; typed loosely so the test suite (no DOM types) compiles it too.
  target: EventTarget | undefined = (globalThis as { document?: EventTarget }).document,
) {
  let traceId = randomHex(16);
  for (const type of ["click", "keydown", "submit"]) {
    target?.addEventListener(type, () => (traceId = randomHex(16)), { capture: true });
  }
  const interceptor: Interceptor = (next) => (req) => {
    req.header.set("traceparent", `00-${traceId}-${randomHex(8)}-01`);
    return next(req);
  };
  return interceptor;
}

/** `bytes` random bytes as lowercase hex (never all zeros: W3C forbids that id). */
function randomHex(bytes: number): string {
  const values = crypto.getRandomValues(new Uint8Array(bytes));
  if (values.every((b) => b === 0)) values[0] = 1;
  return Array.from(values, (b) => b.toString(16).padStart(2, "0")).join("");
}
