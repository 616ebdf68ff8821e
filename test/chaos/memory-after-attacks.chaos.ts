import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientProcess } from "../support/client-process.js";
import { manifestMemoryLimit } from "../support/container.js";
import { insertLargestQuiz, type QuizFixture } from "../support/fixtures.js";
import { sleep } from "../support/load.js";
import { listVia, reportFigures } from "../support/reliability.js";
import { type ServiceProcess, startServiceProcess } from "../support/service-process.js";

// The service in a process of its own, as in its container: a memory cgroup
// of its manifest's limit (deploy/kubernetes.yaml), the image's allocator. Three cycles of each
// flood (HTTP/2 connections that send only the preface, HTTP/2 streams whose
// window stays at 0, HTTP/1.1 connections that pipeline requests and never
// read): it stays under its limit throughout, and gives back what the
// floods took once they are over.

const CYCLES = 3;
const FLOOD_MS = 15_000;
const QUIET_MS = 15_000;
const AFTER_MS = 60_000;

describe("memory through floods and after", () => {
  let svc: ServiceProcess;
  let quiz: QuizFixture;
  const limit = manifestMemoryLimit();
  beforeAll(async () => {
    svc = await startServiceProcess({ asInContainer: true });
    quiz = await insertLargestQuiz(svc.db);
  });
  afterAll(async () => {
    await svc?.close();
  });

  it(`${CYCLES} cycles of each flood: never above the manifest's memory limit, and within 1.5× the idle service's RSS ${AFTER_MS / 1000} s after`, async () => {
    const port = Number(new URL(svc.baseUrl).port);
    const path = `/quizzes/${quiz.quizId}`;
    // Warmed as a serving replica is: every transport called, then left alone.
    for (let i = 0; i < 20; i++) {
      for (const transport of ["rest", "connect", "grpc-web", "grpc"] as const) {
        await listVia(svc, transport, "warm", quiz.quizId);
      }
      await svc.rest("warm", "GET", path);
    }
    await sleep(10_000);
    const idle = svc.rss();
    let max = idle;
    const sampler = setInterval(() => {
      max = Math.max(max, svc.rss());
    }, 100);
    const cycles: Record<string, number>[] = [];
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const tokens = (n: number, kind: string) =>
        Promise.all(Array.from({ length: n }, (_, i) => svc.token(`${kind}-${cycle}-${i}`)));
      const preface = clientProcess<{ opened: number }>("preface-flood.ts", [
        String(port),
        "10050",
        String(FLOOD_MS),
      ]);
      await preface.result;
      const afterPreface = svc.rss();
      const zeroWindow = clientProcess<{ stillOpen: number }>("zero-window-client.ts", [
        JSON.stringify({
          baseUrl: svc.baseUrl,
          path,
          tokens: [await tokens(20, "zw"), await tokens(20, "zw2"), await tokens(20, "zw3")],
          streams: 50,
          waveEveryMs: FLOOD_MS / 3,
          waitMs: 12_000,
        }),
      ]);
      await zeroWindow.result;
      const afterZeroWindow = svc.rss();
      const unread = clientProcess<{ endedByService: number }>("unread-pipeline-client.ts", [
        JSON.stringify({
          port,
          path,
          tokens: await tokens(100, "h1"),
          pipelined: 10,
          holdMs: FLOOD_MS,
        }),
      ]);
      await unread.result;
      const afterUnread = svc.rss();
      await sleep(QUIET_MS);
      const mb = (n: number) => Math.round(n / 1024 / 1024);
      cycles.push({
        afterPrefaceMb: mb(afterPreface),
        afterZeroWindowMb: mb(afterZeroWindow),
        afterUnreadMb: mb(afterUnread),
        quietMb: mb(svc.rss()),
        ...(await heldFigures(svc.metricsUrl)),
      });
    }
    await sleep(AFTER_MS - QUIET_MS);
    clearInterval(sampler);
    const after = svc.rss();
    const mb = (n: number) => Math.round(n / 1024 / 1024);
    reportFigures("memory through floods", {
      limitMb: mb(limit),
      idleMb: mb(idle),
      maxMb: mb(max),
      afterMb: mb(after),
      ...(await heldFigures(svc.metricsUrl)),
      cycles,
      exited: svc.exited(),
    });
    expect(svc.exited()).toBe(false);
    expect(max).toBeLessThanOrEqual(limit);
    expect(after).toBeLessThanOrEqual(1.5 * idle);
    // Still serving.
    expect((await listVia(svc, "grpc", "after", quiz.quizId)).code).toBe("ok");
  }, 600_000);
});

/** What the service's heap holds now, and its collections since start, from its /metrics. */
async function heldFigures(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${metricsUrl}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, "m").exec(text)?.[1] ?? 0);
  const mb = (n: number) => Math.round(n / 1024 / 1024);
  return {
    heapUsedMb: mb(value("nodejs_heap_size_used_bytes")),
    heapTotalMb: mb(value("nodejs_heap_size_total_bytes")),
    externalMb: mb(value("nodejs_external_memory_bytes")),
    collections: value("practice_memory_collections_total"),
  };
}
