import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertLargestQuiz, type QuizFixture } from "../support/fixtures.js";
import { listVia, type Outcome, percentile, reportFigures, tally } from "../support/reliability.js";
import { type ServiceProcess, startServiceProcess } from "../support/service-process.js";

/** The target: each zero-window stream reset within 15 s. */
const RESET_WITHIN_MS = 15_000;
const WAVES = 6;
const CONNECTIONS = 20;
const STREAMS = 50;
const WAVE_EVERY_MS = 2000;

/** Runs test/support/zero-window-client.ts with `args` in a process of its own. */
function attackProcess(args: Record<string, unknown>) {
  return new Promise<{
    statuses: Record<string, number>;
    longestStreamMs: number;
    stillOpen: number;
  }>((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "test/support/zero-window-client.ts", JSON.stringify(args)],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.once("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`attack process exited ${code}`)),
    );
  });
}

describe("clients that never read their answers", () => {
  // The service in a process of its own: its memory is measured alone, apart
  // from vitest's and the bystander's clients' (which share a heap with an
  // in-process service and took some 170 MB of it with no attack at all).
  let svc: ServiceProcess;
  let quiz: QuizFixture;
  beforeAll(async () => {
    svc = await startServiceProcess();
    quiz = await insertLargestQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("20 × 50 zero-window streams a wave for 6 waves on the largest answer: the service's RSS +300 MB at most, each stream reset within 15 s, a bystander gets no 5xx, p99 ≤ 1 s", async () => {
    const size = (await (await svc.rest("probe", "GET", `/quizzes/${quiz.quizId}`)).text()).length;
    // One user a connection, as 20 clients a wave: each within its share of admission.
    const tokens = await Promise.all(
      Array.from({ length: WAVES }, (_, w) =>
        Promise.all(Array.from({ length: CONNECTIONS }, (_, c) => svc.token(`zw-${w}-${c}`))),
      ),
    );
    const service0 = svc.rss();
    let serviceMax = service0;
    global.gc?.();
    const mem0 = process.memoryUsage();
    let testMax = mem0.rss;
    const sampler = setInterval(() => {
      serviceMax = Math.max(serviceMax, svc.rss());
      testMax = Math.max(testMax, process.memoryUsage().rss);
    }, 100);
    // The service's heap and external memory, from its own /metrics (once a second: a figure, not a bound).
    const heap0 = await heapFigures(svc.metricsUrl);
    const heapMax = { ...heap0 };
    const heapSampler = setInterval(async () => {
      const h = await heapFigures(svc.metricsUrl).catch(() => heap0);
      heapMax.heap = Math.max(heapMax.heap, h.heap);
      heapMax.external = Math.max(heapMax.external, h.external);
    }, 1000);
    let attacking = true;
    const attack = attackProcess({
      baseUrl: svc.baseUrl,
      path: `/quizzes/${quiz.quizId}`,
      tokens,
      streams: STREAMS,
      waveEveryMs: WAVE_EVERY_MS,
      waitMs: RESET_WITHIN_MS + 2000,
    }).finally(() => {
      attacking = false;
    });
    // The bystander: REST and gRPC lists, one after another, until the attack process ends.
    const bystander: Outcome[] = [];
    while (attacking) {
      bystander.push(await listVia(svc, "rest", "bystander", quiz.quizId));
      bystander.push(await listVia(svc, "grpc", "bystander", quiz.quizId));
    }
    const result = await attack;
    clearInterval(sampler);
    clearInterval(heapSampler);
    const mb = (n: number) => Math.round(n / 1024 / 1024);
    reportFigures("zero-window waves", {
      answerBytes: size,
      streams: WAVES * CONNECTIONS * STREAMS,
      ...result,
      rssGrowthMb: mb(serviceMax - service0),
      heapGrowthMb: mb(heapMax.heap - heap0.heap),
      externalGrowthMb: mb(heapMax.external - heap0.external),
      testProcessRssGrowthMb: mb(testMax - mem0.rss),
      bystanderCalls: bystander.length,
      bystanderCodes: tally(bystander, (o) => o.code),
      bystanderP99Ms: Math.round(
        percentile(
          bystander.map((o) => o.ms),
          99,
        ),
      ),
    });
    expect(result.stillOpen).toBe(0);
    expect(result.longestStreamMs).toBeLessThanOrEqual(RESET_WITHIN_MS);
    // The bound. Answers held unsent without bound took RSS to 7.7 GB; computing
    // answers for connections that could take none took it to +394-418 MB.
    expect(mb(serviceMax - service0)).toBeLessThanOrEqual(300);
    expect(bystander.filter((o) => o.code !== "ok")).toEqual([]);
    expect(
      percentile(
        bystander.map((o) => o.ms),
        99,
      ),
    ).toBeLessThanOrEqual(1000);
  }, 180_000);
});

/** The service's heap used and external memory now, in bytes, from its /metrics. */
async function heapFigures(metricsUrl: string): Promise<{ heap: number; external: number }> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, "m").exec(text)?.[1] ?? 0);
  return {
    heap: value("nodejs_heap_size_used_bytes"),
    external: value("nodejs_external_memory_bytes"),
  };
}
