import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Db } from "../db/database.js";
import { outboxBacklog } from "../db/outbox-repository.js";

/** Lag buckets, seconds: a poll interval to a long NATS outage. */
const LAG_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** A scrape waits this long for the backlog query, then reports the last value. */
const BACKLOG_TIMEOUT_MS = 500;

type Backlog = Awaited<ReturnType<typeof outboxBacklog>>;

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
    let last: Promise<Backlog> | undefined;
    const backlog = () => {
      // One query per scrape, shared by both gauges.
      last ??= withTimeout(outboxBacklog(db), BACKLOG_TIMEOUT_MS).finally(() => {
        setImmediate(() => {
          last = undefined;
        });
      });
      return last;
    };
    /** A gauge of the backlog query's answer; it keeps its last value when the query fails. */
    const backlogGauge = (name: string, help: string, value: (b: Backlog) => number) =>
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          const b = await backlog().catch(() => undefined);
          if (b) this.set(value(b));
        },
      });
    backlogGauge(
      "practice_outbox_backlog",
      "Events in the outbox, not yet published.",
      (b) => b.count,
    );
    backlogGauge(
      "practice_outbox_oldest_age_seconds",
      "Age of the oldest event waiting in the outbox (0 when empty).",
      (b) => (b.oldest ? Math.max(0, (Date.now() - b.oldest.getTime()) / 1000) : 0),
    );
    this.published = new Counter({
      name: "practice_outbox_published_total",
      help: "Events published to JetStream (acknowledged, duplicates included), by type.",
      labelNames: ["type"],
      registers,
    });
    const counter = (name: string, help: string) => new Counter({ name, help, registers });
    this.publishErrors = counter(
      "practice_outbox_publish_errors_total",
      "Publishes to JetStream that failed (timeout, NATS down, no stream); retried later.",
    );
    this.duplicates = counter(
      "practice_outbox_duplicates_total",
      "Publishes JetStream dropped as duplicates of a message id it had (an event sent again after a lost ack or a relay's death).",
    );
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
