import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { v7 as uuidv7 } from "uuid";
import { afterAll, describe, expect, it } from "vitest";
import { runAverageScore } from "../../examples/consumer/average-score.js";
import { outboxEvent } from "../../src/db/outbox-event.js";
import { answerSubmitted, sessionCompleted, sessionStarted } from "../../src/domain/events.js";
import { ensureStream, type NatsTarget, subjectOf } from "../../src/events/nats.js";
import { testStore } from "../support/database.js";
import { REPO, runEntryPoint } from "../support/entry.js";
import { deleteStream, requireNats, testNatsUrl, uniqueTarget } from "../support/nats.js";

/**
 * examples/consumer: the per-user running average survives restarts, and a
 * crash between saving and acknowledging does not count a session twice.
 * It needs no database: it runs in the SQLite pass only.
 */

const natsUp = testStore() === "sqlite" && (await requireNats());
const target = uniqueTarget();
const dir = mkdtempSync(join(tmpdir(), "consumer-"));
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  if (natsUp) await deleteStream(target);
});

/** Publishes one completed session per [user, correct of 4, mode] (a whole-quiz round by default). */
async function publishCompleted(
  rounds: [string, number, ("full" | "review" | "missed")?][],
): Promise<void> {
  const nc = await connect({ servers: testNatsUrl() });
  try {
    await ensureStream(nc, target);
    const js = jetstream(nc);
    for (const [userId, correct, mode = "full"] of rounds) {
      const id = uuidv7();
      const summary = {
        id,
        quizId: "1",
        startedAt: new Date(),
        completedAt: null,
        totalQuestions: 4,
        correctAnswers: correct,
        answeredQuestions: 4,
        mode,
      };
      const event = outboxEvent(sessionCompleted(userId, summary, new Date()));
      await js.publish(subjectOf(target.subjectPrefix, event.type), event.json, {
        msgID: event.id,
      });
    }
  } finally {
    await nc.close();
  }
}

/** Runs the consumer until it has applied `untilSeq`, or stops by itself (a crash). */
async function run(untilSeq: number, crashAt?: number) {
  const stop = new AbortController();
  const averages: string[] = [];
  let last = 0;
  const state = await runAverageScore(
    {
      ...target,
      durable: "average-score-test",
      stateFile: join(dir, "state.json"),
      ackWaitMs: 1000,
      onAverage: (user, mode, average, sessions) => {
        averages.push(`${user} ${mode} ${average} ${sessions}`);
      },
      crashBeforeAck: (seq) => {
        last = seq;
        if (seq >= untilSeq) stop.abort();
        return seq === crashAt;
      },
    },
    stop.signal,
  );
  return { state, averages, last };
}

describe.skipIf(!natsUp)("the average-score consumer example", () => {
  it("keeps each user's running average per mode across restarts, counting nothing twice", async () => {
    await publishCompleted([
      ["ann", 4],
      ["ann", 2],
      // A round of what ann missed: kept apart, never averaged with whole-quiz rounds.
      ["ann", 4, "missed"],
      ["bob", 0],
    ]);
    const first = await run(4);
    expect(first.averages).toEqual([
      "ann full 100 1",
      "ann full 75 2",
      "ann missed 100 1",
      "bob full 0 1",
    ]);

    await publishCompleted([
      ["ann", 0],
      ["bob", 4],
    ]);
    // Dies after saving event 5 and before acknowledging it: JetStream delivers it again.
    const crashed = await run(6, 5);
    expect(crashed.last).toBe(5);
    const restarted = await run(6);
    expect(restarted.averages).toEqual(["bob full 50 2"]);
    expect(restarted.state.users).toEqual({
      ann: { full: { sessions: 3, totalScore: 150 }, missed: { sessions: 1, totalScore: 100 } },
      bob: { full: { sessions: 2, totalScore: 100 } },
    });
  });
});

/** An example of examples/consumer/ run on `on`'s stream, its output (stdout and stderr) gathered. */
function startExample(script: string, on: NatsTarget, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ["--import", "tsx", `examples/consumer/${script}`], {
    cwd: REPO,
    env: {
      ...process.env,
      NATS_URL: testNatsUrl(),
      NATS_STREAM: on.stream,
      NATS_SUBJECT_PREFIX: on.subjectPrefix,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  const gather = (d: Buffer) => {
    out += d;
  };
  child.stdout.on("data", gather);
  child.stderr.on("data", gather);
  return { child, output: () => out };
}

/** `npm run example:consumer` on `on`'s stream, as the durable consumer `name`. */
const startConsumer = (on: NatsTarget, name: string) =>
  startExample("main.ts", on, { CONSUMER_NAME: name, CONSUMER_STATE: join(dir, `${name}.json`) });

describe.skipIf(!natsUp)("npm run example:consumer", () => {
  it("says when it is connected, before any event arrives, prints each completion's average per mode, and stops on Ctrl-C", async () => {
    await publishCompleted([]);
    const { child, output } = startConsumer(target, "average-score-connected");
    try {
      await expect
        .poll(output, { timeout: 30_000 })
        .toMatch(/^connected to NATS: consuming \S+\.session\.completed \(\d+ waiting\);/m);
      // Each completion prints its user's average over the rounds of its mode.
      await publishCompleted([
        ["cat", 1],
        ["cat", 4, "missed"],
      ]);
      await expect
        .poll(output, { timeout: 30_000 })
        .toMatch(
          /^cat: average 25\.0% over 1 full session\(s\)\ncat: average 100\.0% over 1 missed session\(s\)$/m,
        );
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGINT");
      await exited;
      expect(output()).toMatch(/^stopped after stream sequence \d+$/m);
    } finally {
      child.kill("SIGKILL");
    }
  }, 60_000);

  it("started before the service made the stream, says it waits for it, then consumes once it is there", async () => {
    const early = uniqueTarget();
    const { child, output } = startConsumer(early, "average-score-early");
    try {
      await expect
        .poll(output, { timeout: 30_000 })
        .toMatch(new RegExp(`^waiting for the stream ${early.stream}: `, "m"));
      expect(child.exitCode).toBeNull();
      const nc = await connect({ servers: testNatsUrl() });
      await ensureStream(nc, early).finally(() => nc.close());
      await expect
        .poll(output, { timeout: 30_000 })
        .toMatch(/^connected to NATS: consuming \S+\.session\.completed \(0 waiting\);/m);
      expect(output()).not.toMatch(/Error|^\s+at /m);
    } finally {
      child.kill("SIGKILL");
      await deleteStream(early);
    }
  }, 60_000);
});

describe.skipIf(!natsUp)("npm run example:events", () => {
  it("prints every event of every type, as it is published", async () => {
    const watched = uniqueTarget();
    const nc = await connect({ servers: testNatsUrl() });
    await ensureStream(nc, watched).finally(() => nc.close());
    const { child, output } = startExample("watch.ts", watched);
    try {
      await expect
        .poll(output, { timeout: 30_000 })
        .toMatch(/^watching \S+\.> on the stream \S+, from now on \(Ctrl-C to stop\)$/m);
      const summary = {
        id: uuidv7(),
        quizId: "1",
        startedAt: new Date(),
        completedAt: null,
        totalQuestions: 4,
        correctAnswers: 1,
        answeredQuestions: 1,
        mode: "full" as const,
      };
      const pub = await connect({ servers: testNatsUrl() });
      try {
        const js = jetstream(pub);
        for (const event of [
          sessionStarted("watcher", summary),
          answerSubmitted("watcher", summary, {
            questionId: "3",
            isCorrect: true,
            answeredAt: new Date(),
          }),
        ]) {
          const encoded = outboxEvent(event);
          await js.publish(subjectOf(watched.subjectPrefix, encoded.type), encoded.json, {
            msgID: encoded.id,
          });
        }
      } finally {
        await pub.close();
      }
      await expect.poll(output, { timeout: 30_000 }).toMatch(/^practice\.answer\.submitted /m);
      const lines = output().trim().split("\n").slice(1);
      expect(lines.map((l) => l.split(" ")[0])).toEqual([
        "practice.session.started",
        "practice.answer.submitted",
      ]);
      expect(JSON.parse(lines[1]?.slice(lines[1].indexOf(" ")) ?? "")).toMatchObject({
        user_id: "watcher",
        question_id: "3",
        is_correct: true,
      });
    } finally {
      child.kill("SIGKILL");
      await deleteStream(watched);
    }
  }, 60_000);
});

describe.skipIf(testStore() !== "sqlite")("npm run example:consumer without NATS", () => {
  it("says in one line that it cannot reach NATS, and exits 1", async () => {
    const run = await runEntryPoint("examples/consumer/main.ts", {
      env: { NATS_URL: "nats://127.0.0.1:1", CONSUMER_STATE: join(dir, "none.json") },
    });
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.errorLines).toHaveLength(1);
    expect(run.errorLines[0]).toMatch(
      /^cannot reach NATS at nats:\/\/127\.0\.0\.1:1: .+ \(start NATS with JetStream, or set NATS_URL\)$/,
    );
  }, 30_000);
});
