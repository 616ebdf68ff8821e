import { type MsgHdrs, headers as natsHeaders } from "@nats-io/transport-node";
import { propagation, type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import type { OutboxRow } from "../db/outbox-repository.js";
import { traceFields } from "../db/outbox-trace-fields.js";
import { startSpanFrom } from "../tracer.js";

/** What the relay publishes for one outbox row, with its trace context. */
export interface TracedPublish {
  /** The CloudEvent with `traceparent`/`tracestate` (Distributed Tracing extension) when traced. */
  body: string;
  /** NATS headers carrying the same context; undefined when untraced. */
  headers: MsgHdrs | undefined;
  /** The PRODUCER span (a no-op one with tracing off): end it with `endPublish`. */
  span: Span;
}

/**
 * Starts the publish of `row` to `subject` as a PRODUCER span whose parent is
 * the context stored with the row (the call that wrote it), and carries the
 * producer's context in the NATS message headers and in the CloudEvent. With
 * tracing off in this process the stored context is passed on as it is, so a
 * consumer still joins the writer's trace.
 */
export function startPublish(row: OutboxRow, subject: string): TracedPublish {
  const stored = parseCarrier(row.traceContext);
  const { span, context } = startSpanFrom(stored, `publish ${subject}`, {
    kind: SpanKind.PRODUCER,
    attributes: {
      "messaging.system": "nats",
      "messaging.operation.type": "send",
      "messaging.operation.name": "publish",
      "messaging.destination.name": subject,
      "messaging.message.id": row.eventId,
      "cloudevents.event_id": row.eventId,
      "cloudevents.event_type": row.type,
      "cloudevents.event_subject": row.sessionId,
    },
  });
  const carrier: Record<string, string> = {};
  propagation.inject(context, carrier);
  // Only traceparent and tracestate go on (db/outbox-trace-fields.ts), whatever a stored row holds.
  const fields = traceFields(carrier) ?? (stored && traceFields(stored));
  if (fields === undefined) return { body: row.body, headers: undefined, span };
  const headers = natsHeaders();
  for (const [name, value] of Object.entries(fields)) headers.set(name, value);
  return { body: withTraceExtension(row.body, fields), headers, span };
}

/** Ends the PRODUCER span: failed with the error's class (never its text), or not. */
export function endPublish(span: Span, error?: unknown): void {
  if (error !== undefined && span.isRecording()) {
    const type = error instanceof Error ? error.name : "Error";
    span.setAttribute("error.type", type);
    span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  }
  span.end();
}

/**
 * The CloudEvent JSON (an object, as db/outbox-event.ts writes it) with the
 * Distributed Tracing extension's attributes added.
 */
function withTraceExtension(body: string, fields: Record<string, string>): string {
  if (!body.endsWith("}")) return body;
  let extension = `,"traceparent":${JSON.stringify(fields.traceparent)}`;
  if (fields.tracestate) extension += `,"tracestate":${JSON.stringify(fields.tracestate)}`;
  return `${body.slice(0, -1)}${extension}}`;
}

/** The stored carrier, or undefined if there is none or it is not what we wrote. */
function parseCarrier(json: string | null): Record<string, string> | undefined {
  if (json === null) return undefined;
  try {
    const value: unknown = JSON.parse(json);
    if (typeof value !== "object" || value === null) return undefined;
    return Object.fromEntries(
      Object.entries(value).filter((e): e is [string, string] => typeof e[1] === "string"),
    );
  } catch {
    return undefined;
  }
}
