import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientProcess } from "../support/client-process.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { listVia, type Outcome, reportFigures, tally } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

/** Each side is measured in ROUNDS windows of WINDOW_MS, alone and attacked in turn. */
const ROUNDS = 5;
const WINDOW_MS = 2000;
/** Before each window: the attack paused has been read, or resumed is under way. */
const SETTLE_MS = 1000;

/**
 * Runs test/support/tiny-frames-client.ts in a process of its own, for at
 * most `ms`; `pause` and `resume` stop and continue it (SIGSTOP, SIGCONT).
 */
function tinyFrames(port: number, token: string, ms: number) {
  const { child, result } = clientProcess<Record<string, number>>("tiny-frames-client.ts", [
    String(port),
    token,
    "10",
    String(ms),
  ]);
  // Killed when the test fails before `stop`: that is no second failure.
  result.catch(() => undefined);
  return {
    pause: () => child.kill("SIGSTOP"),
    resume: () => child.kill("SIGCONT"),
    /** Ends it: what it sent, and what the service did to it. */
    stop: () => {
      child.kill("SIGCONT");
      child.kill("SIGTERM");
      return result;
    },
    kill: () => child.kill("SIGKILL"),
  };
}

/** A bystander's gRPC and REST lists, one after another, for `ms`. */
async function bystander(svc: TestService, quizId: string, ms: number) {
  const outcomes: Outcome[] = [];
  const until = performance.now() + ms;
  while (performance.now() < until) {
    outcomes.push(await listVia(svc, "grpc", "bystander", quizId));
    outcomes.push(await listVia(svc, "rest", "bystander", quizId));
  }
  return outcomes;
}

describe("a client sending 1-byte DATA frames", () => {
  let svc: TestService;
  let quiz: QuizFixture;
  beforeAll(async () => {
    svc = await startTestService();
    quiz = await insertQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("on 10 streams: a bystander keeps ≥ 70% of its calls a second alone", async () => {
    const port = Number(new URL(svc.baseUrl).port);
    const attack = tinyFrames(port, await svc.token("tiny"), 60_000);
    try {
      // Warm (JIT, pools) while the attack process starts (tsx), then pause it.
      await bystander(svc, quiz.quizId, 2000);
      attack.pause();
      // Alone and attacked in turn, so that whatever else the machine does
      // (the database's own work after the suite's earlier files, say)
      // weighs on both sides alike.
      const alone: Outcome[] = [];
      const beside: Outcome[] = [];
      const cpuMs = { alone: 0, beside: 0 };
      const measure = async (into: Outcome[], side: "alone" | "beside") => {
        const cpu = process.cpuUsage();
        into.push(...(await bystander(svc, quiz.quizId, WINDOW_MS)));
        const used = process.cpuUsage(cpu);
        cpuMs[side] += Math.round((used.user + used.system) / 1000);
      };
      for (let round = 0; round < ROUNDS; round++) {
        // What the paused attacker had sent already is read first.
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        await measure(alone, "alone");
        attack.resume();
        await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
        await measure(beside, "beside");
        attack.pause();
      }
      const frames = await attack.stop();
      const seconds = (ROUNDS * WINDOW_MS) / 1000;
      reportFigures("1-byte DATA frames on 10 streams", {
        attacker: frames,
        aloneCallsPerSecond: Math.round(alone.length / seconds),
        besideCallsPerSecond: Math.round(beside.length / seconds),
        besideCodes: tally(beside, (o) => o.code),
        // The service and the bystander share this process.
        processCpuMs: cpuMs,
      });
      // The flood was met: its connections were ended (GOAWAY ENHANCE_YOUR_CALM).
      expect(frames.goaways).toBeGreaterThan(0);
      expect(beside.filter((o) => o.code !== "ok")).toEqual([]);
      expect(beside.length).toBeGreaterThanOrEqual(0.7 * alone.length);
    } finally {
      attack.kill();
    }
  }, 90_000);
});
