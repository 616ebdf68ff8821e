import type { Interceptor } from "@connectrpc/connect";
import { attachLimits } from "../../src/app/call-limits.js";
import { errors } from "../../src/app/errors.js";
import type { Call } from "../../src/edge/call.js";
import { callLimits } from "../../src/edge/call-limits.js";
import type { Admission } from "../../src/ops/admission.js";
import { callKey } from "../../src/rpc/call-interceptor.js";

const ANSWERED = errors.answered();

/**
 * A call made without the edge, as in-process tests through
 * `createRouterTransport` need: Connect's own signal and the server's deadline,
 * its limits worked out as the edge's (edge/call-limits.ts).
 */
export function detachedCall(signal: AbortSignal, timeoutMs: number, admission: Admission): Call {
  const controller = new AbortController();
  const deadline = performance.now() + timeoutMs;
  const timer = setTimeout(() => controller.abort(errors.deadlineExceeded()), timeoutMs);
  const remainingMs = () => deadline - performance.now();
  attachLimits(controller.signal, callLimits(remainingMs));
  const onAbort = () => controller.abort(signal.reason ?? errors.canceled());
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  controller.signal.addEventListener("abort", () => {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  });
  return {
    signal: controller.signal,
    remainingMs,
    end() {
      if (!controller.signal.aborted) controller.abort(ANSWERED);
    },
    // No connection of its own to leave or to wait for.
    admit: (slot, work) => admission.run({ ...slot, signal: controller.signal }, work),
  };
}

/**
 * Gives each unary call through a router transport the call the edge would
 * (put it first, outermost), and ends it once answered.
 */
export function detachedCalls(admission: Admission, timeoutMs: number): Interceptor {
  return (next) => async (req) => {
    if (req.stream) return next(req);
    const call = detachedCall(req.signal, timeoutMs, admission);
    req.contextValues.set(callKey, call);
    try {
      return await next(req);
    } finally {
      call.end();
    }
  };
}
