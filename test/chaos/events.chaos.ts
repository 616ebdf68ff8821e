import { type ChildProcess, spawn } from "node:child_process";
import { Registry } from "prom-client";
import { v7 as uuidv7 } from "uuid";
import { afterAll, describe, expect, it } from "vitest";
import { outboxEvent } from "../../src/db/outbox-event.js";
import { insertEvents } from "../../src/db/outbox-repository.js";
import { sessionStarted } from "../../src/domain/events.js";
import { OutboxMetrics } from "../../src/events/relay-metrics.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { insertQuiz } from "../support/fixtures.js";
import { listeningPort, serviceEnv } from "../support/listening.js";
import { sleep } from "../support/load.js";
import {
  countByType,
  deleteStream,
  eventually,
  expectedEvents,
  requireNats,
  streamCount,
  streamMessages,
  testNatsUrl,
  testRelay,
  uniqueTarget,
} from "../support/nats.js";
import { startPracticeLoad } from "../support/practice-load.js";
import { reportFigures } from "../support/reliability.js";
import { startTestService } from "../support/service.js";
import { TcpProxy } from "../support/tcp-proxy.js";

/**
 * The outbox relay when things break, on MariaDB and a real NATS JetStream:
 * NATS unreachable for 10 s under load, and the service killed (SIGKILL) in
 * the middle of relaying. Every committed change must end up in the stream
 * exactly once.
 */

const natsUp = await requireNats();
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

async function sum(registry: Registry, name: string): Promise<number> {
  const text = await registry.getSingleMetricAsString(name);
  return [...text.matchAll(/^\S+ (\d+(?:\.\d+)?)$/gm)].reduce((a, m) => a + Number(m[1]), 0);
}

describe.skipIf(!natsUp)("events when NATS or the relay fails", () => {
  it("NATS unreachable for 10 s under starts and answers: no request fails, every event arrives once afterwards", async () => {
    const svc = await startTestService();
    cleanups.push(() => svc.close());
    const quiz = await insertQuiz(svc.db, { questions: 4 });
    const nats = new URL(testNatsUrl());
    const proxy = new TcpProxy(nats.hostname, Number(nats.port || 4222));
    await proxy.start();
    cleanups.push(() => proxy.cut());
    const target = uniqueTarget(`nats://127.0.0.1:${proxy.port}`);
    cleanups.push(() => deleteStream(target));
    const registry = new Registry();
    const relay = testRelay(svc.db, target, {
      metrics: new OutboxMetrics(registry, svc.db),
      publishTimeoutMs: 1000,
    });
    relay.start();
    cleanups.push(() => relay.stop());

    const load = startPracticeLoad(() => svc.baseUrl, quiz, 8, "nats-down");
    await sleep(3000);
    await proxy.cut();
    const cutAt = Date.now();
    await sleep(10_000);
    const backlogAtEnd = Number(
      /practice_outbox_backlog (\d+)/.exec(await registry.metrics())?.[1] ?? -1,
    );
    await proxy.restore();
    const restoredAt = Date.now();
    await sleep(3000);
    await load.stop();

    await eventually(
      async () =>
        (await svc.db.selectFrom("practice_outbox").select("seq").limit(1).execute()).length === 0,
      60_000,
      "an empty outbox",
    );
    const drainedAfterMs = Date.now() - restoredAt;
    await relay.stop();
    const messages = await streamMessages(target);
    const expected = await expectedEvents(svc.db);
    reportFigures("NATS down 10 s", {
      requests: load.statuses,
      events: messages.length,
      backlogAtEndOfOutage: backlogAtEnd,
      outageMs: restoredAt - cutAt,
      drainedWithinMsOfReturn: drainedAfterMs,
      publishErrors: await sum(registry, "practice_outbox_publish_errors_total"),
      duplicatesDropped: await sum(registry, "practice_outbox_duplicates_total"),
    });
    expect(Object.keys(load.statuses).filter((s) => !/^2\d\d$/.test(s))).toEqual([]);
    expect(backlogAtEnd).toBeGreaterThan(0);
    expect(countByType(messages)).toEqual(expected);
    expect(new Set(messages.map((m) => m.msgId)).size).toBe(messages.length);
  });

  it("the service killed with SIGKILL mid-relay: after a restart nothing is lost, nothing doubled", async () => {
    const database: TestDatabase = await createTestDatabase("mysql");
    cleanups.push(() => database.drop());
    const quiz = await insertQuiz(database.db, { questions: 4 });
    const target = uniqueTarget();
    cleanups.push(() => deleteStream(target));
    // A backlog of 4,000 events the service relays when it starts.
    const backlog = Array.from({ length: 400 }, () => uuidv7()).flatMap((id) =>
      Array.from({ length: 10 }, (_, n) =>
        outboxEvent(
          sessionStarted("backlog", {
            id,
            quizId: quiz.quizId,
            startedAt: new Date(),
            totalQuestions: n,
            mode: "full",
          }),
        ),
      ),
    );
    for (let i = 0; i < backlog.length; i += 500) {
      await database.db
        .transaction()
        .execute((trx) => insertEvents(trx, backlog.slice(i, i + 500)));
    }

    let service = await startService(database.url, target);
    cleanups.push(async () => {
      service.child.kill("SIGKILL");
    });
    const load = startPracticeLoad(() => service.baseUrl, quiz, 4, "killed");
    // Kill it once it has published some of the backlog, not all.
    await eventually(async () => (await streamCount(target)) >= 200, 30_000, "publishing to begin");
    service.child.kill("SIGKILL");
    await service.exited;
    const atKill = await streamCount(target);
    const leased = await database.db
      .selectFrom("practice_outbox")
      .select("seq")
      .where("lease_until", ">", 0)
      .execute();
    const left = await database.db.selectFrom("practice_outbox").select("seq").execute();

    service = await startService(database.url, target);
    await sleep(2000);
    await load.stop();
    await eventually(
      async () =>
        (await database.db.selectFrom("practice_outbox").select("seq").limit(1).execute())
          .length === 0,
      60_000,
      "an empty outbox",
    );
    service.child.kill("SIGTERM");
    await service.exited;

    const messages = await streamMessages(target);
    const ids = messages.map((m) => m.msgId);
    const real = messages.filter((m) => m.event.data.user_id !== "backlog");
    const expected = await expectedEvents(database.db);
    reportFigures("SIGKILL mid-relay", {
      backlog: backlog.length,
      inStreamAtKill: atKill,
      leftInOutboxAtKill: left.length,
      leasedAtKill: leased.length,
      streamAfter: messages.length,
      requests: load.statuses,
    });
    expect(atKill).toBeLessThan(backlog.length);
    expect(new Set(ids).size).toBe(ids.length);
    const inStream = new Set(ids);
    expect(backlog.filter((e) => !inStream.has(e.id))).toEqual([]);
    expect(countByType(real)).toEqual(expected);
  });
});

interface RunningService {
  child: ChildProcess;
  baseUrl: string;
  exited: Promise<void>;
}

/** src/main.ts in its own process, relaying to `target`, with a 2 s lease. */
async function startService(
  databaseUrl: string,
  target: { url: string; stream: string; subjectPrefix: string },
): Promise<RunningService> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env: serviceEnv({
      DATABASE_URL: databaseUrl,
      NATS_URL: target.url,
      NATS_STREAM: target.stream,
      NATS_SUBJECT_PREFIX: target.subjectPrefix,
      OUTBOX_LEASE_MS: "2000",
      OUTBOX_BATCH_SIZE: "100",
    }),
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await listeningPort(child).port;
  return { child, baseUrl: `http://127.0.0.1:${port}`, exited };
}
