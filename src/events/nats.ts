import { type JetStreamClient, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import type { EventType } from "../domain/events.js";

/** Where events go: the NATS servers, the JetStream stream, the subjects' first token. */
export interface NatsTarget {
  /** `nats://host:port`, or several, comma-separated. */
  url: string;
  /** Default PRACTICE. */
  stream: string;
  /** Default "practice": subjects are `practice.session.started` and so on. */
  subjectPrefix: string;
}

/**
 * JetStream's duplicate window on the stream the relay creates: well over the
 * relay's lease, so an event republished after a relay died is recognised.
 */
export const DUPLICATE_WINDOW_MS = 2 * 60_000;

/** The NATS subject of an event type: `<prefix>.session.started`, etc. */
export function subjectOf(prefix: string, type: EventType | string): string {
  return `${prefix}.${type.replace(/^practice\./, "")}`;
}

/**
 * Connects to NATS; rejects at once when no server answers. Once connected
 * it reconnects for ever: events wait in the outbox meanwhile.
 */
export async function connectNats(url: string, name: string): Promise<NatsConnection> {
  return connect({
    servers: url.split(",").map((s) => s.trim()),
    name,
    maxReconnectAttempts: -1,
    // A silent server fails the attempt sooner than the default: stop() waits for it.
    timeout: 5000,
    reconnectTimeWait: 500,
    // Short pings: a NATS that vanished without a FIN is noticed in seconds.
    pingInterval: 5000,
    maxPingOut: 2,
  });
}

/**
 * The events' stream, created if missing (subjects `<prefix>.>`, file storage);
 * an existing stream is left as its operators configured it.
 */
export async function ensureStream(nc: NatsConnection, target: NatsTarget): Promise<void> {
  const jsm = await jetstreamManager(nc, { timeout: 5000 });
  try {
    await jsm.streams.info(target.stream);
  } catch (err) {
    if (!/stream not found/i.test(String(err))) throw err;
    await jsm.streams.add({
      name: target.stream,
      subjects: [`${target.subjectPrefix}.>`],
      duplicate_window: DUPLICATE_WINDOW_MS * 1_000_000,
    });
  }
}

export function jetStreamOf(nc: NatsConnection, timeoutMs: number): JetStreamClient {
  return jetstream(nc, { timeout: timeoutMs });
}
