import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import {
  AckPolicy,
  DeliverPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { propagation, ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";

/**
 * A durable JetStream consumer of `practice.session.completed` that keeps a
 * running average score per user and kind of round (`mode`: the whole quiz,
 * a review of what is due, or what the last round missed, which are a few
 * hard questions and not progress on the quiz). The totals and the last
 * applied stream sequence are saved together, atomically, before the ack:
 * an event redelivered after a crash is not above the saved sequence and is
 * skipped.
 */

export interface AverageScoreOptions {
  /** `nats://127.0.0.1:4222`. */
  url: string;
  /** PRACTICE. */
  stream: string;
  /** "practice": the subject consumed is `<prefix>.session.completed`. */
  subjectPrefix: string;
  /** The durable consumer's name: the stream remembers its position. */
  durable: string;
  /** Where the totals are kept across restarts. */
  stateFile: string;
  /** Called after each event applied: the user's average over their rounds of that mode. */
  onAverage?: (userId: string, mode: string, average: number, sessions: number) => void;
  /** Called once if the stream is not there yet (the service creates it on its first start). */
  onWaitingForStream?: (stream: string) => void;
  /** Called once consuming: the subject, and how many of its events wait to be read. */
  onConnected?: (subject: string, waiting: number) => void;
  /** Stops after applying this event's state, before acknowledging it (tests: a crash). */
  crashBeforeAck?: (streamSeq: number) => boolean;
  /** How long JetStream waits for an ack before delivering again (default 30 s). */
  ackWaitMs?: number;
}

export interface AverageScoreState {
  /** Stream sequence of the last event applied. */
  lastSeq: number;
  /** By user, then by mode ("full", "review", "missed"). */
  users: Record<string, Record<string, { sessions: number; totalScore: number }>>;
}

/** The data of a `practice.session.completed` CloudEvent (proto/practice/v1/events.proto). */
interface SessionCompletedEvent {
  id: string;
  type: string;
  /** CloudEvents Distributed Tracing extension: the producer's context. */
  traceparent?: string;
  tracestate?: string;
  /** `mode` is absent from events published before it was added: whole-quiz rounds then. */
  data: { user_id: string; session_id: string; score_percentage: number; mode?: string };
}

const tracer = trace.getTracer("average-score");

/** The message's trace context: its NATS headers, else the CloudEvent's extension attributes. */
function traceFields(m: JsMsg, event: SessionCompletedEvent): Record<string, string> {
  const fields: Record<string, string> = {};
  const traceparent = m.headers?.get("traceparent") || event.traceparent;
  const tracestate = m.headers?.get("tracestate") || event.tracestate;
  if (traceparent) fields.traceparent = traceparent;
  if (tracestate) fields.tracestate = tracestate;
  return fields;
}

export function loadState(file: string): AverageScoreState {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as AverageScoreState;
  } catch {
    return { lastSeq: 0, users: {} };
  }
}

function saveState(file: string, state: AverageScoreState): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(state));
  renameSync(`${file}.tmp`, file);
}

/** Resolves once the stream exists, checking each second (or when `signal` aborts). */
async function streamCreated(
  jsm: JetStreamManager,
  options: AverageScoreOptions,
  signal: AbortSignal,
): Promise<void> {
  let told = false;
  while (!signal.aborted) {
    try {
      await jsm.streams.info(options.stream);
      return;
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound))
        throw err;
    }
    if (!told) options.onWaitingForStream?.(options.stream);
    told = true;
    await sleep(1000, undefined, { signal }).catch(() => undefined);
  }
}

/**
 * Consumes until `signal` aborts (or `crashBeforeAck` says so). Returns the
 * state it saved last.
 */
export async function runAverageScore(
  options: AverageScoreOptions,
  signal: AbortSignal,
): Promise<AverageScoreState> {
  const state = loadState(options.stateFile);
  const nc = await connect({ servers: options.url });
  try {
    const jsm = await jetstreamManager(nc);
    await streamCreated(jsm, options, signal);
    if (signal.aborted) return state;
    const config = {
      durable_name: options.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      filter_subject: `${options.subjectPrefix}.session.completed`,
      ack_wait: (options.ackWaitMs ?? 30_000) * 1_000_000,
    };
    await jsm.consumers
      .info(options.stream, options.durable)
      .catch(() => jsm.consumers.add(options.stream, config));
    const consumer = await jetstream(nc).consumers.get(options.stream, options.durable);
    const messages = await consumer.consume({ max_messages: 100, expires: 1000 });
    const { num_pending } = await consumer.info(true);
    options.onConnected?.(config.filter_subject, num_pending);
    signal.addEventListener("abort", () => void messages.close(), { once: true });
    if (signal.aborted) await messages.close();
    for await (const m of messages) {
      const seq = m.info.streamSequence;
      const event = m.json<SessionCompletedEvent>();
      // The trace goes on: a CONSUMER span under the relay's PRODUCER span.
      // With no OpenTelemetry SDK started (tracing.ts) this is a no-op.
      const span = tracer.startSpan(
        `process ${m.subject}`,
        {
          kind: SpanKind.CONSUMER,
          attributes: {
            "messaging.system": "nats",
            "messaging.operation.type": "process",
            "messaging.destination.name": m.subject,
            "messaging.message.id": event.id,
            "cloudevents.event_id": event.id,
            "cloudevents.event_type": event.type,
          },
        },
        propagation.extract(ROOT_CONTEXT, traceFields(m, event)),
      );
      if (seq > state.lastSeq) {
        const { user_id: userId, mode = "full", score_percentage: score } = event.data;
        const byMode = state.users[userId] ?? {};
        state.users[userId] = byMode;
        const totals = byMode[mode] ?? { sessions: 0, totalScore: 0 };
        byMode[mode] = totals;
        totals.sessions += 1;
        totals.totalScore += score;
        state.lastSeq = seq;
        saveState(options.stateFile, state);
        options.onAverage?.(userId, mode, totals.totalScore / totals.sessions, totals.sessions);
        if (options.crashBeforeAck?.(seq)) {
          span.end();
          break;
        }
      }
      m.ack();
      span.end();
    }
    return state;
  } finally {
    await nc.close();
  }
}
