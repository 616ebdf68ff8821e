import { sql } from "kysely";
import { Registry } from "prom-client";
import { v7 as uuidv7 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../src/db/database.js";
import { outboxEvent } from "../../src/db/outbox-event.js";
import type { OutboxEvent } from "../../src/db/outbox-repository.js";
import { insertEvents } from "../../src/db/outbox-repository.js";
import { sessionStarted } from "../../src/domain/events.js";
import { OutboxMetrics } from "../../src/events/relay-metrics.js";
import { insertQuiz } from "../support/fixtures.js";
import {
  deleteStream,
  eventually,
  requireNats,
  streamMessages,
  testRelay,
  uniqueTarget,
} from "../support/nats.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * The relay against a real NATS JetStream (each test its own stream), on
 * each store: what the outbox holds arrives in the stream, once, in order
 * per session, with the CloudEvents id as message id, and leaves the outbox.
 */

const natsUp = await requireNats();
let svc: TestService;

beforeAll(async () => {
  if (natsUp) svc = await startTestService();
});
afterAll(async () => {
  await svc?.close();
});

async function outboxSize(db: Db): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM practice_outbox`.execute(db);
  return Number(rows[0]?.n);
}

/** `perSession` started events for each of `sessions` new session ids, interleaved. */
function syntheticEvents(sessions: number, perSession: number): OutboxEvent[] {
  const ids = Array.from({ length: sessions }, () => uuidv7());
  const events: OutboxEvent[] = [];
  for (let n = 0; n < perSession; n++) {
    for (const id of ids) {
      const userId = `u-${id.slice(-4)}`;
      events.push(
        outboxEvent(
          sessionStarted(userId, {
            id,
            quizId: "1",
            startedAt: new Date(),
            totalQuestions: n,
            mode: "full",
          }),
        ),
      );
    }
  }
  return events;
}

describe.skipIf(!natsUp)("the outbox relay", () => {
  it("publishes each operation's events to practice.<type>, in order, once, then empties the outbox", async () => {
    const target = uniqueTarget();
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    const user = "relay-user";
    const started = await svc.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const { id } = (await started.json()) as { id: string };
    const post = (path: string, body: unknown) =>
      svc.rest(user, "POST", path, {
        body: JSON.stringify(body),
        headers: { "content-type": "application/json" },
      });
    await post(`/sessions/${id}/answers`, { question_id: quiz.questionIds[0], user_answer: "A1" });
    await post(`/sessions/${id}/answers`, { question_id: quiz.questionIds[1], user_answer: "no" });
    await post(`/sessions/${id}/complete`, {});
    const written = await svc.db
      .selectFrom("practice_outbox")
      .select(["event_id", "body"])
      .where("session_id", "=", id)
      .orderBy("seq")
      .execute();
    expect(written).toHaveLength(4);

    const registry = new Registry();
    const metrics = new OutboxMetrics(registry, svc.db);
    const relay = testRelay(svc.db, target, { metrics });
    relay.start();
    try {
      await eventually(async () => (await outboxSize(svc.db)) === 0, 20_000, "an empty outbox");
    } finally {
      await relay.stop();
    }
    const messages = (await streamMessages(target)).filter((m) => m.event.subject === id);
    await deleteStream(target);
    expect(messages.map((m) => m.subject)).toEqual([
      `${target.subjectPrefix}.session.started`,
      `${target.subjectPrefix}.answer.submitted`,
      `${target.subjectPrefix}.answer.submitted`,
      `${target.subjectPrefix}.session.completed`,
    ]);
    expect(messages.map((m) => m.msgId)).toEqual(written.map((w) => w.event_id));
    expect(messages.map((m) => m.event)).toEqual(written.map((w) => JSON.parse(w.body)));
    expect(messages.map((m) => m.event.data.is_correct)).toEqual([
      undefined,
      true,
      false,
      undefined,
    ]);
    const text = await registry.metrics();
    expect(text).toMatch(/practice_outbox_backlog 0/);
    expect(text).toMatch(/practice_outbox_published_total\{type="practice.answer.submitted"\} 2/);
    expect(text).toMatch(/practice_outbox_lag_seconds_count \d+/);
  });

  it("with two replicas relaying at once, puts each event in the stream once, in order per session", async () => {
    const target = uniqueTarget();
    const events = syntheticEvents(40, 15); // 600 events, sessions interleaved
    await svc.db.transaction().execute((trx) => insertEvents(trx, events));
    const registries = [new Registry(), new Registry()];
    const relays = registries.map((registry) =>
      testRelay(svc.db, target, {
        batchSize: 25,
        metrics: new OutboxMetrics(registry, svc.db),
      }),
    );
    for (const relay of relays) relay.start();
    try {
      await eventually(async () => (await outboxSize(svc.db)) === 0, 30_000, "an empty outbox");
    } finally {
      await Promise.all(relays.map((r) => r.stop()));
    }
    const messages = await streamMessages(target);
    await deleteStream(target);
    expect(messages).toHaveLength(events.length);
    expect(new Set(messages.map((m) => m.msgId)).size).toBe(events.length);
    // Per session, the stream order is the outbox order.
    const order = (list: { session: string; id: string }[]) => {
      const bySession = new Map<string, string[]>();
      for (const { session, id } of list)
        bySession.set(session, [...(bySession.get(session) ?? []), id]);
      return bySession;
    };
    expect(order(messages.map((m) => ({ session: m.event.subject, id: m.msgId })))).toEqual(
      order(events.map((e) => ({ session: e.sessionId, id: e.id }))),
    );
    // Both took part, and no event was published twice (claims are disjoint).
    const published = await Promise.all(
      registries.map(async (r) => {
        const m = (await r.getSingleMetricAsString("practice_outbox_published_total")).match(
          / (\d+)$/m,
        );
        return Number(m?.[1] ?? 0);
      }),
    );
    expect(published.every((n) => n > 0)).toBe(true);
    expect(published.reduce((a, b) => a + b, 0)).toBe(events.length);
  });
});
