import { create, type DescMessage, toJson } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { context, propagation } from "@opentelemetry/api";
import { CloudEvent } from "cloudevents";
import type { Transaction } from "kysely";
import { v7 as uuidv7 } from "uuid";
import {
  AnswerSubmittedSchema,
  SessionCompletedSchema,
  SessionExpiredSchema,
  SessionStartedSchema,
} from "../../gen/practice/v1/events_pb.js";
import type { EventType, SessionEvent } from "../domain/events.js";
import type { Database } from "./database.js";
import { insertEvents, type OutboxEvent } from "./outbox-repository.js";
import { traceFields } from "./outbox-trace-fields.js";

/** The CloudEvents `source` of every event. */
const EVENT_SOURCE = "/practice-sessions";

const SCHEMAS: Record<EventType, DescMessage> = {
  "practice.session.started": SessionStartedSchema,
  "practice.answer.submitted": AnswerSubmittedSchema,
  "practice.session.completed": SessionCompletedSchema,
  "practice.session.expired": SessionExpiredSchema,
};

/** Encodes `event` as a CloudEvents 1.0 JSON document with its protobuf payload as `data`. */
export function outboxEvent(event: SessionEvent, newId: () => string = uuidv7): OutboxEvent {
  const id = newId();
  const schema = SCHEMAS[event.type];
  const init = Object.fromEntries(
    Object.entries(event.data).map(([k, v]) => [k, v instanceof Date ? timestampFromDate(v) : v]),
  );
  // snake_case names and every field, false and 0 included: consumers read
  // `is_correct: false`, not a missing key.
  const data = toJson(schema, create(schema, init), {
    useProtoFieldName: true,
    alwaysEmitImplicit: true,
  });
  const cloudEvent = new CloudEvent({
    specversion: "1.0",
    id,
    source: EVENT_SOURCE,
    type: event.type,
    subject: event.data.sessionId,
    time: event.time.toISOString(),
    datacontenttype: "application/json",
    data,
  });
  return {
    id,
    type: event.type,
    sessionId: event.data.sessionId,
    time: event.time,
    json: JSON.stringify(cloudEvent),
    traceContext: activeTraceContext(),
  };
}

/**
 * The active trace context (the call's span, when tracing is on) as the
 * configured propagators write it, its `traceparent` and `tracestate` only
 * (outbox-trace-fields.ts), JSON; undefined with tracing off, when
 * OpenTelemetry's no-op propagator writes nothing.
 */
function activeTraceContext(): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  const fields = traceFields(carrier);
  return fields === undefined ? undefined : JSON.stringify(fields);
}

/**
 * Adds the use case's events to the outbox, encoded. Call it in the transaction of the change
 * they describe, so that they commit, or roll back, with it.
 */
export function recordEvents(
  trx: Transaction<Database>,
  events: readonly SessionEvent[],
): Promise<void> {
  return insertEvents(
    trx,
    events.map((e) => outboxEvent(e)),
  );
}
