import { spawn } from "node:child_process";
import { setPriority } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { listVia, type Outcome, reportFigures, tally } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

const MS = 6000;

/** Runs test/support/tiny-frames-client.ts in a process of its own. */
function tinyFrames(port: number, token: string, ms: number) {
  return new Promise<Record<string, number>>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "test/support/tiny-frames-client.ts",
        String(port),
        token,
        "10",
        String(ms),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    // The attacker's own CPU is not the service's cost: on this box it would
    // take a core from the service; across a network it takes none.
    if (child.pid !== undefined) setPriority(child.pid, 19);
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.once("exit", (code) =>
      code === 0
        ? resolve(JSON.parse(out))
        : reject(new Error(`tiny-frames process exited ${code}`)),
    );
  });
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
    // Warm (JIT, pools) before the first measure, so that both are taken alike.
    await bystander(svc, quiz.quizId, 2000);
    let cpu = process.cpuUsage();
    const alone = await bystander(svc, quiz.quizId, MS);
    const aloneCpu = process.cpuUsage(cpu);
    const port = Number(new URL(svc.baseUrl).port);
    const attack = tinyFrames(port, await svc.token("tiny"), MS + 1000);
    // The attack process's start (tsx) is left out.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    cpu = process.cpuUsage();
    const beside = await bystander(svc, quiz.quizId, MS);
    const besideCpu = process.cpuUsage(cpu);
    const frames = await attack;
    reportFigures("1-byte DATA frames on 10 streams", {
      attacker: frames,
      aloneCallsPerSecond: Math.round(alone.length / (MS / 1000)),
      besideCallsPerSecond: Math.round(beside.length / (MS / 1000)),
      besideCodes: tally(beside, (o) => o.code),
      // The service and the bystander share this process.
      processCpuMs: {
        alone: Math.round((aloneCpu.user + aloneCpu.system) / 1000),
        beside: Math.round((besideCpu.user + besideCpu.system) / 1000),
      },
    });
    expect(frames.frames).toBeGreaterThan(0);
    expect(beside.filter((o) => o.code !== "ok")).toEqual([]);
    expect(beside.length).toBeGreaterThanOrEqual(0.7 * alone.length);
  }, 60_000);
});
