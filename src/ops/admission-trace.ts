import { trace } from "@opentelemetry/api";

/**
 * Marks on the call's span (when tracing is on) how long it queued for an
 * admission slot, and whether it got one: call this as the wait starts, and
 * what it returns as the wait ends. Only calls that wait call it: a call
 * admitted at once has no event. With tracing off there is no span: nothing.
 */
export function traceAdmissionWait(): (refused: boolean) => void {
  const span = trace.getActiveSpan();
  if (span === undefined || !span.isRecording()) return () => {};
  const since = performance.now();
  return (refused) =>
    span.addEvent("admission", {
      "admission.queue_ms": performance.now() - since,
      "admission.refused": refused,
    });
}
