import { Writable } from "node:stream";
import { pino } from "pino";
import { v7 as uuidv7 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outboxEvent } from "../../src/db/outbox-event.js";
import { insertEvents } from "../../src/db/outbox-repository.js";
import { sessionStarted } from "../../src/domain/events.js";
import { insertQuiz } from "../support/fixtures.js";
import {
  deleteStream,
  eventually,
  requireNats,
  streamCount,
  testNatsUrl,
  testRelay,
  uniqueTarget,
} from "../support/nats.js";
import { startTestService, type TestService } from "../support/service.js";
import { TcpProxy } from "../support/tcp-proxy.js";

/**
 * The relay while NATS is down, through a TCP proxy the test cuts: its
 * retries back off to a cap, with jitter, and it says so once per change
 * of state with the number of events waiting, not once per retry. The
 * service's defaults (first wait 1 s, cap 30 s) over 60 s of outage are
 * scaled down 20 times: first wait 50 ms, cap 1.5 s, a publish's timeout
 * 250 ms, 3 s of outage.
 */

const natsUp = await requireNats();
let svc: TestService;
let proxy: TcpProxy;

beforeAll(async () => {
  if (!natsUp) return;
  svc = await startTestService();
  const nats = new URL(testNatsUrl().replace(/^nats:/, "http:"));
  proxy = new TcpProxy(nats.hostname, Number(nats.port || 4222));
  await proxy.start();
});
afterAll(async () => {
  await proxy?.cut();
  await svc?.close();
});

async function addEvent(quizId: string): Promise<void> {
  const started = {
    id: uuidv7(),
    quizId,
    startedAt: new Date(),
    totalQuestions: 1,
    mode: "full" as const,
  };
  await svc.db
    .transaction()
    .execute((trx) => insertEvents(trx, [outboxEvent(sessionStarted("relay-backoff", started))]));
}

describe.skipIf(!natsUp)("the relay while NATS is down", () => {
  it("backs off and logs at most a few lines for the whole outage; delivers everything after it", async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: "info" },
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(...String(chunk).trim().split("\n"));
          done();
        },
      }),
    );
    const target = { ...uniqueTarget(), url: `nats://127.0.0.1:${proxy.port}` };
    // The publish timeout scaled too (5 s → 250 ms): a publish caught by the cut fails within the outage.
    const relay = testRelay(svc.db, target, {
      logger,
      retryMs: 50,
      maxRetryMs: 1500,
      publishTimeoutMs: 250,
    });
    const { quizId } = await insertQuiz(svc.db, { questions: 1 });
    try {
      relay.start();
      await addEvent(quizId);
      await eventually(async () => (await streamCount(target)) === 1, 10_000, "the first event");
      const before = lines.length;

      await proxy.cut();
      // Three seconds down (sixty at the service's defaults), events still written meanwhile.
      for (let i = 0; i < 15; i++) {
        await addEvent(quizId);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const during = lines.slice(before);
      await proxy.restore();
      await eventually(async () => (await streamCount(target)) === 16, 20_000, "every event");

      // Said once when publishing again (logged just after the batch that delivered them).
      await expect
        .poll(() => lines.some((l) => /outbox relay: publishing again/.test(l)), { timeout: 5000 })
        .toBe(true);
      const relayLines = lines.slice(before).filter((l) => l.includes("outbox relay"));
      expect(relayLines.length, relayLines.join("\n")).toBeLessThanOrEqual(10);
      // Said once when it started failing, with what waits.
      const down = during.filter((l) => l.includes("outbox relay"));
      expect(down.length, down.join("\n")).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(down[0] ?? "{}")).toMatchObject({ waiting: expect.any(Number) });
    } finally {
      await relay.stop();
      await deleteStream(target);
    }
  }, 60_000);
});
