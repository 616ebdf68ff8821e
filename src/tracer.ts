import {
  type Context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  type SpanOptions,
  trace,
} from "@opentelemetry/api";

/** The service's tracer: every span it makes, whatever the layer, is of one instrumentation scope. */
export const tracer = trace.getTracer("practice-sessions");

/**
 * Starts a span whose parent is the trace context propagated in `carrier` (a
 * request's headers, the context an outbox row stored), a new trace without
 * one; returns it with the context in which it is the active span.
 */
export function startSpanFrom<Carrier>(
  carrier: Carrier | undefined,
  name: string,
  options: SpanOptions,
): { span: Span; context: Context } {
  const parent = carrier ? propagation.extract(ROOT_CONTEXT, carrier) : ROOT_CONTEXT;
  const span = tracer.startSpan(name, options, parent);
  return { span, context: trace.setSpan(parent, span) };
}
