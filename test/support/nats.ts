import { randomBytes } from "node:crypto";
import { connect as netConnect } from "node:net";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import type { Db } from "../../src/db/database.js";
import type { NatsTarget } from "../../src/events/nats.js";
import { OutboxRelay, type RelayOptions } from "../../src/events/relay.js";

/** The NATS server (with JetStream) the event tests publish to. */
export function testNatsUrl(): string {
  return process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";
}

/** Whether something answers at the test NATS address. */
export async function natsAnswers(url = testNatsUrl()): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = netConnect(Number(port || 4222), hostname, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
    socket.setTimeout(2000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * Whether to run the NATS tests: yes when NATS answers; a missing NATS skips
 * them with a note, except in CI (CI=true), where it fails.
 */
export async function requireNats(): Promise<boolean> {
  if (await natsAnswers()) return true;
  const note = `no NATS at ${testNatsUrl()}: the event relay tests are SKIPPED`;
  if (process.env.CI) throw new Error(note);
  console.warn(note);
  return false;
}

/** A stream and subject prefix of this test's own on the shared NATS, at `url`. */
export function uniqueTarget(url = testNatsUrl()): NatsTarget {
  const tag = randomBytes(5).toString("hex");
  return { url, stream: `TEST_${tag}`, subjectPrefix: `test_${tag}` };
}

export interface StreamMessage {
  seq: number;
  subject: string;
  msgId: string;
  /** The CloudEvent. */
  event: {
    id: string;
    type: string;
    subject: string;
    source: string;
    specversion: string;
    time: string;
    datacontenttype: string;
    data: Record<string, unknown>;
  };
}

/** Every message of a stream, in stream order; none if it does not exist. */
export async function streamMessages(target: NatsTarget): Promise<StreamMessage[]> {
  const nc = await connect({ servers: testNatsUrl() });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(target.stream).catch(() => undefined);
    if (info === undefined || info.state.messages === 0) return [];
    const out: StreamMessage[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(target.stream, { seq });
      if (m === null) continue;
      out.push({
        seq: m.seq,
        subject: m.subject,
        msgId: m.header.get("Nats-Msg-Id"),
        event: m.json(),
      });
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** Deletes a test's stream. */
export async function deleteStream(target: NatsTarget): Promise<void> {
  const nc = await connect({ servers: testNatsUrl() });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(target.stream).catch(() => {});
  } finally {
    await nc.close();
  }
}

/** A relay on `db` to `target`, polling often, logging nothing (TEST_LOG_LEVEL to see). */
export function testRelay(
  db: Db,
  target: NatsTarget,
  options: Partial<RelayOptions> = {},
): OutboxRelay {
  return new OutboxRelay({
    db,
    target,
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
    pollMs: 20,
    retryMs: 200,
    ...options,
  });
}

/** Polls `check` until it returns true, or fails after `timeoutMs`. */
export async function eventually(
  check: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * What the database says must be in the stream, one message per committed
 * change: a `started` per session, a `submitted` per answer, a `completed`
 * per completed session (for runs without stale sessions).
 */
export async function expectedEvents(db: Db): Promise<Record<string, number>> {
  const sessions = await db
    .selectFrom("practice_sessions")
    .select(["id", "completed_at"])
    .execute();
  const answers = await db.selectFrom("practice_session_answers").select("id").execute();
  return {
    "practice.session.started": sessions.length,
    "practice.answer.submitted": answers.length,
    "practice.session.completed": sessions.filter((s) => s.completed_at !== null).length,
  };
}

/** Messages per event type. */
export function countByType(messages: StreamMessage[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const m of messages) counts[m.event.type] = (counts[m.event.type] ?? 0) + 1;
  return counts;
}

/** Messages in a stream (0 if it does not exist). */
export async function streamCount(target: NatsTarget): Promise<number> {
  const nc = await connect({ servers: testNatsUrl() });
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(target.stream).catch(() => undefined);
    return info?.state.messages ?? 0;
  } finally {
    await nc.close();
  }
}
