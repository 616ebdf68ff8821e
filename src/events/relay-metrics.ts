import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Db } from "../db/database.js";
import { outboxBacklog } from "../db/outbox-repository.js";

/** Lag buckets, seconds: a poll interval to a long NATS outage. */
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** A scrape waits this long for the backlog query, then reports the last value. */
const BACKLOG_TIMEOUT_MS = 500;

/**
 * The outbox's Prometheus metrics: backlog and oldest event age (read on each
 * scrape, on the connection `DatabaseHandle.opsDb` gives, never the users' pool),
 * and what the relay published, how late, and its failures.
 */
export class OutboxMetrics {
  readonly published: Counter<"type">;
  readonly publishErrors: Counter;
  readonly duplicates: Counter;
  readonly connected: Gauge;
  readonly lag: Histogram;

  constructor(registry: Registry, db: Db) {
    const registers = [registry];
    let last: Promise<{ count: number; oldest: Date | null }> | undefined;
    const backlog = () => {
      // One query per scrape, shared by both gauges.
      last ??= withTimeout(outboxBacklog(db), BACKLOG_TIMEOUT_MS).finally(() => {
        setImmediate(() => {
          last = undefined;
        });
      });
      return last;
    };
    new Gauge({
      name: "practice_outbox_backlog",
      help: "Events in the outbox, not yet published.",
      registers,
      async collect() {
        const b = await backlog().catch(() => undefined);
        if (b) this.set(b.count);
      },
    });
    new Gauge({
      name: "practice_outbox_oldest_age_seconds",
      help: "Age of the oldest event waiting in the outbox (0 when empty).",
      registers,
      async collect() {
        const b = await backlog().catch(() => undefined);
        if (b) this.set(b.oldest ? Math.max(0, (Date.now() - b.oldest.getTime()) / 1000) : 0);
      },
    });
    this.published = new Counter({
      name: "practice_outbox_published_total",
      help: "Events published to JetStream (acknowledged, duplicates included), by type.",
      labelNames: ["type"],
      registers,
    });
    this.publishErrors = new Counter({
      name: "practice_outbox_publish_errors_total",
      help: "Publishes to JetStream that failed (timeout, NATS down, no stream); retried later.",
      registers,
    });
    this.duplicates = new Counter({
      name: "practice_outbox_duplicates_total",
      help: "Publishes JetStream dropped as duplicates of a message id it had (an event sent again after a lost ack or a relay's death).",
      registers,
    });
    this.connected = new Gauge({
      name: "practice_outbox_relay_connected",
      help: "1 while this process's relay is connected to NATS, else 0 (events then wait in the outbox).",
      registers,
    });
    this.lag = new Histogram({
      name: "practice_outbox_lag_seconds",
      help: "Time from an event's change to JetStream's acknowledgement of it.",
      buckets: LAG_BUCKETS,
      registers,
    });
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
