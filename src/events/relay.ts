import type { JetStreamClient } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { SqliteAdapter, type Transaction } from "kysely";
import type { Logger } from "pino";
import type { Database, Db } from "../db/database.js";
import {
  deleteEvents,
  findClaimable,
  findSessionSeqs,
  leaseEvents,
  type OutboxRow,
  outboxBacklog,
  releaseEvents,
} from "../db/outbox-repository.js";
import { connectNats, ensureStream, jetStreamOf, type NatsTarget, subjectOf } from "./nats.js";
import type { OutboxMetrics } from "./relay-metrics.js";
import { endPublish, startPublish } from "./trace-event.js";

export interface RelayOptions {
  db: Db;
  target: NatsTarget;
  logger: Logger;
  metrics?: OutboxMetrics;
  /** Rows claimed per batch (default 200). */
  batchSize?: number;
  /** How long a claim lasts before another relay may take the rows (default 30 s). */
  leaseMs?: number;
  /** Wait between polls of an empty outbox (default 100 ms). */
  pollMs?: number;
  /** Longest wait for JetStream's acknowledgement of one publish (default 5 s). */
  publishTimeoutMs?: number;
  /**
   * Wait after a first failure (NATS or the database down) before trying
   * again (default 1 s); it doubles with each failure after, to maxRetryMs.
   */
  retryMs?: number;
  /** Longest wait between two tries while failing (default 30 s). */
  maxRetryMs?: number;
  /** The NATS connection's name (default "practice-relay"). */
  name?: string;
}

/** What one batch did. */
export interface BatchResult {
  claimed: number;
  published: number;
}

/**
 * Publishes the outbox to JetStream (event id as message id), deleting rows once
 * acknowledged: at least once, in commit order per session, relays claiming
 * disjoint rows under a lease so a dead relay's rows are taken again.
 */
export class OutboxRelay {
  readonly #o: Required<Omit<RelayOptions, "metrics">> & { metrics?: OutboxMetrics };
  readonly #sqlite: boolean;
  #nc: NatsConnection | undefined;
  #js: JetStreamClient | undefined;
  #streamReady = false;
  /** False between a disconnect and the reconnect: no claims meanwhile. */
  #connected = false;
  #stopped = false;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  /** Failed batches in a row; 0 while publishing. */
  #failures = 0;
  /** When the first of those failures happened. */
  #failingSince = 0;

  constructor(options: RelayOptions) {
    this.#o = {
      batchSize: 200,
      leaseMs: 30_000,
      pollMs: 100,
      publishTimeoutMs: 5000,
      retryMs: 1000,
      maxRetryMs: 30_000,
      name: "practice-relay",
      ...options,
    };
    this.#sqlite = options.db.getExecutor().adapter instanceof SqliteAdapter;
    this.#o.metrics?.connected.set(0);
  }

  /** Starts relaying in the background until `stop()`. */
  start(): void {
    this.#loop ??= this.#run();
  }

  /** Finishes the batch in flight, then closes the NATS connection. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
    await this.#nc?.close().catch(() => {});
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      let wait = this.#o.pollMs;
      try {
        const result = await this.relayBatch();
        if (result.claimed === this.#o.batchSize) wait = 0;
        if (this.#failures > 0) await this.#recovered();
      } catch (err) {
        wait = await this.#failed(err);
      }
      if (wait > 0 && !this.#stopped) await this.#sleep(wait);
    }
  }

  /**
   * A failed batch: the wait before the next try, doubling from retryMs to
   * maxRetryMs, with jitter (half of it random) so relays that failed
   * together do not all come back at once. Said once, on the first failure.
   */
  async #failed(err: unknown): Promise<number> {
    this.#failures++;
    const { retryMs, maxRetryMs } = this.#o;
    const backoff = Math.min(maxRetryMs, retryMs * 2 ** Math.min(this.#failures - 1, 30));
    if (this.#failures === 1) {
      this.#failingSince = Date.now();
      this.#o.logger.warn(
        { err: String(err), waiting: await this.#waiting(), maxRetryMs },
        "outbox relay: cannot publish; events wait in the outbox, retrying with back-off",
      );
    }
    return backoff / 2 + Math.random() * (backoff / 2);
  }

  /** Publishing again after failures: said once, with what still waits. */
  async #recovered(): Promise<void> {
    const failures = this.#failures;
    this.#failures = 0;
    this.#o.logger.info(
      { waiting: await this.#waiting(), failures, downMs: Date.now() - this.#failingSince },
      "outbox relay: publishing again",
    );
  }

  /** Events in the outbox now; undefined when the database does not answer. */
  async #waiting(): Promise<number | undefined> {
    return outboxBacklog(this.#o.db).then(
      (b) => b.count,
      () => undefined,
    );
  }

  /**
   * One batch: connect if needed, claim, publish, delete and release. Throws
   * when NATS or the database cannot be reached (nothing is lost: rows stay).
   */
  async relayBatch(): Promise<BatchResult> {
    const js = await this.#jetStream();
    const rows = await this.#claim(Date.now());
    if (rows.length === 0) return { claimed: 0, published: 0 };
    const bySession = new Map<string, OutboxRow[]>();
    for (const row of rows) {
      const chain = bySession.get(row.sessionId);
      if (chain) chain.push(row);
      else bySession.set(row.sessionId, [row]);
    }
    // Sessions side by side, each session's events one after the other.
    const outcomes = await Promise.all([...bySession.values()].map((c) => this.#publish(js, c)));
    const published = outcomes.flatMap((o) => o.published);
    const failed = outcomes.flatMap((o) => o.failed);
    await deleteEvents(this.#o.db, published);
    if (failed.length > 0) {
      this.#streamReady = false;
      await releaseEvents(this.#o.db, failed);
      const error = outcomes.find((o) => o.error !== undefined)?.error;
      throw new Error(`${failed.length} of ${rows.length} events not published: ${String(error)}`);
    }
    return { claimed: rows.length, published: published.length };
  }

  async #publish(js: JetStreamClient, chain: OutboxRow[]) {
    const published: number[] = [];
    for (const [i, row] of chain.entries()) {
      try {
        const subject = subjectOf(this.#o.target.subjectPrefix, row.type);
        // A PRODUCER span in the trace of the call that wrote the row.
        const traced = startPublish(row, subject);
        try {
          const ack = await js.publish(subject, traced.body, {
            msgID: row.eventId,
            timeout: this.#o.publishTimeoutMs,
            ...(traced.headers ? { headers: traced.headers } : {}),
          });
          if (ack.duplicate) this.#o.metrics?.duplicates.inc();
          endPublish(traced.span);
        } catch (error) {
          endPublish(traced.span, error);
          throw error;
        }
      } catch (error) {
        this.#o.metrics?.publishErrors.inc();
        // The rest of this session waits: publishing it now would break its order.
        return { published, failed: chain.slice(i).map((r) => r.seq), error };
      }
      published.push(row.seq);
      this.#o.metrics?.published.inc({ type: row.type });
      this.#o.metrics?.lag.observe((Date.now() - row.createdAt.getTime()) / 1000);
    }
    return { published, failed: [] as number[], error: undefined };
  }

  /** Claims up to batchSize rows in one short transaction: lease them, commit. */
  async #claim(nowMs: number): Promise<OutboxRow[]> {
    const claim = async (trx: Transaction<Database>) => {
      const rows = await findClaimable(trx, this.#o.batchSize, nowMs);
      if (rows.length === 0) return rows;
      const mine = new Set(rows.map((r) => r.seq));
      const maxSeq = Math.max(...mine);
      const sessions = [...new Set(rows.map((r) => r.sessionId))];
      // Another relay holds an older row of this session: ours must wait for it.
      const firstForeign = new Map<string, number>();
      const all = await findSessionSeqs(trx, sessions, maxSeq);
      for (const { sessionId, seq } of all.sort((a, b) => a.seq - b.seq)) {
        if (!mine.has(seq) && !firstForeign.has(sessionId)) firstForeign.set(sessionId, seq);
      }
      const keep = rows.filter((r) => r.seq < (firstForeign.get(r.sessionId) ?? Infinity));
      await leaseEvents(
        trx,
        keep.map((r) => r.seq),
        nowMs + this.#o.leaseMs,
      );
      return keep;
    };
    // READ COMMITTED: no gap locks, so a claim never blocks inserts into the outbox.
    const transaction = this.#o.db.transaction();
    return this.#sqlite
      ? transaction.execute(claim)
      : transaction.setIsolationLevel("read committed").execute(claim);
  }

  async #jetStream(): Promise<JetStreamClient> {
    if (this.#nc === undefined || this.#nc.isClosed()) {
      const nc = await connectNats(this.#o.target.url, this.#o.name);
      this.#nc = nc;
      this.#js = jetStreamOf(nc, this.#o.publishTimeoutMs);
      this.#streamReady = false;
      this.#setConnected(true);
      void this.#watch(nc);
      this.#o.logger.info({ stream: this.#o.target.stream }, "outbox relay: connected to NATS");
    }
    if (!this.#connected) throw new Error("NATS is disconnected (reconnecting)");
    if (!this.#streamReady) {
      await ensureStream(this.#nc, this.#o.target);
      this.#streamReady = true;
    }
    return this.#js as JetStreamClient;
  }

  /** Follows the connection's state until it closes. */
  async #watch(nc: NatsConnection): Promise<void> {
    for await (const status of nc.status()) {
      if (status.type === "disconnect") this.#setConnected(false);
      if (status.type === "reconnect") {
        this.#setConnected(true);
        this.#wake?.();
      }
    }
    this.#setConnected(false);
  }

  #setConnected(connected: boolean): void {
    this.#connected = connected;
    this.#o.metrics?.connected.set(connected ? 1 : 0);
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }
}
