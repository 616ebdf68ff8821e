import { Agent, request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientProcess } from "../support/client-process.js";
import { insertLargestQuiz, type QuizFixture } from "../support/fixtures.js";
import { percentile, reportFigures, tally } from "../support/reliability.js";
import { type ServiceProcess, startServiceProcess } from "../support/service-process.js";

const CONNECTIONS = 100;
const PIPELINED = 10;
/** The target: every such connection ended by the service within 20 s. */
const ENDED_WITHIN_MS = 20_000;

describe("HTTP/1.1 clients that pipeline requests and never read the answers", () => {
  // The service in a process of its own: its memory is measured alone.
  let svc: ServiceProcess;
  let quiz: QuizFixture;
  beforeAll(async () => {
    svc = await startServiceProcess({ asInContainer: true });
    quiz = await insertLargestQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it(`${CONNECTIONS} connections × ${PIPELINED} unread 282 KB answers: all ended by the service within 20 s, RSS +300 MB at most, a keep-alive bystander with no 5xx at p99 ≤ 1 s`, async () => {
    const path = `/quizzes/${quiz.quizId}`;
    const tokens = await Promise.all(
      Array.from({ length: CONNECTIONS }, (_, i) => svc.token(`unread-${i}`)),
    );
    const rss0 = svc.rss();
    let rssMax = rss0;
    const sampler = setInterval(() => {
      rssMax = Math.max(rssMax, svc.rss());
    }, 100);
    const attack = clientProcess<{ connections: number; endedByService: number }>(
      "unread-pipeline-client.ts",
      [
        JSON.stringify({
          port: Number(new URL(svc.baseUrl).port),
          path,
          tokens,
          pipelined: PIPELINED,
          holdMs: ENDED_WITHIN_MS,
        }),
      ],
    );
    let attacking = true;
    void attack.result.finally(() => {
      attacking = false;
    });
    // The bystander: GetQuiz of a small page on one keep-alive connection, again and again.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const auth = await svc.auth("bystander");
    const bystander: { status: number; ms: number }[] = [];
    while (attacking) {
      bystander.push(await get(`${svc.baseUrl}/quizzes/${quiz.quizId}/sessions`, auth, agent));
    }
    agent.destroy();
    const result = await attack.result;
    clearInterval(sampler);
    const mb = (n: number) => Math.round(n / 1024 / 1024);
    const ms = bystander.map((o) => o.ms);
    reportFigures("unread HTTP/1.1 answers", {
      ...result,
      rssGrowthMb: mb(rssMax - rss0),
      bystanderCalls: bystander.length,
      bystanderStatuses: tally(bystander, (o) => String(o.status)),
      bystanderP99Ms: Math.round(percentile(ms, 99)),
    });
    expect(result.endedByService).toBe(CONNECTIONS);
    expect(mb(rssMax - rss0)).toBeLessThanOrEqual(300);
    expect(bystander.filter((o) => o.status === 0 || o.status >= 500)).toEqual([]);
    expect(percentile(ms, 99)).toBeLessThanOrEqual(1000);
  }, 120_000);
});

function get(url: string, headers: Record<string, string>, agent: Agent) {
  return new Promise<{ status: number; ms: number }>((resolve) => {
    const t0 = performance.now();
    const req = request(url, { agent, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
    });
    req.on("error", () => resolve({ status: 0, ms: performance.now() - t0 }));
    req.end();
  });
}
