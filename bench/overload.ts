/**
 * `npm run bench:overload`: goodput and admitted latency of ListSessions
 * (gRPC) past saturation, with admission control as shipped (MAX_IN_FLIGHT =
 * the pool's size) and without it (MAX_IN_FLIGHT = 100,000: every call
 * queues). Steps: the saturated rate (closed loop, 24 callers: fewer than the
 * 30 admitted or queued), the
 * unloaded p99 (one caller), then open loops at 2x and 5x the saturated
 * rate. "Goodput" counts OK answers per second; "admitted p99" is the p99
 * of OK answers, measured from each call's scheduled time. Short runs
 * (BENCH_OVERLOAD_MS, default 3000 per step): on a shared box, compare the
 * two rows of one run, not runs.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import { ListSessionsRequestSchema } from "../gen/practice/v1/practice_session_service_pb.js";
import { signToken } from "../src/auth/tokens.js";
import { type Child, freePort, startChild } from "./lib/children.js";
import { generate, MAIN_USER } from "./lib/data.js";
import { bearer, closedLoop, GrpcLoadClient } from "./lib/load.js";
import { percentile } from "./lib/stats.js";

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const STEP_MS = Number(process.env.BENCH_OVERLOAD_MS ?? 3000);
const SECRET = "bench-secret-bench-secret-bench-secret-0123";
const POOL_SIZE = 10;
const LIST = "/practice.v1.PracticeSessionService/ListSessions";

interface Step {
  load: string;
  offeredRps: number;
  goodput: number;
  okP50: number;
  okP99: number;
  statuses: Record<string, number>;
}

/** Open loop at `rate`/s for STEP_MS; latency from the scheduled send time. */
async function openLoop(call: () => Promise<string>, rate: number, label: string): Promise<Step> {
  const ok: number[] = [];
  const statuses: Record<string, number> = {};
  const total = Math.floor((rate * STEP_MS) / 1000);
  let sent = 0;
  let done = 0;
  const began = performance.now();
  await new Promise<void>((resolve) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - began) * rate) / 1000));
      while (sent < due) {
        const scheduled = began + (sent * 1000) / rate;
        sent++;
        call().then((status) => {
          statuses[status] = (statuses[status] ?? 0) + 1;
          if (status === "OK") ok.push(performance.now() - scheduled);
          if (++done === total) resolve();
        });
      }
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  const seconds = (performance.now() - began) / 1000;
  const sorted = ok.sort((a, b) => a - b);
  return {
    load: label,
    offeredRps: Math.round(rate),
    goodput: Math.round(ok.length / seconds),
    okP50: round(percentile(sorted, 50)),
    okP99: round(percentile(sorted, 99)),
    statuses,
  };
}

const round = (ms: number) => Math.round(ms * 10) / 10;

async function measure(name: string, dbUrl: string, quizId: string, maxInFlight?: number) {
  const port = await freePort();
  const child: Child = await startChild(name, "src/main.ts", {
    PORT: String(port),
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: dbUrl,
    JWT_SECRET: SECRET,
    LOG_LEVEL: "error",
    DB_POOL_SIZE: String(POOL_SIZE),
    ...(maxInFlight ? { MAX_IN_FLIGHT: String(maxInFlight) } : {}),
    NODE_ENV: "production",
  });
  const clients = [0, 1].map(() => new GrpcLoadClient(`127.0.0.1:${port}`));
  try {
    const md = bearer(await signToken(SECRET, MAIN_USER));
    const body = Buffer.from(
      toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId })),
    );
    let n = 0;
    const call = () => (clients[n++ % 2] as GrpcLoadClient).call(LIST, body, md);
    await closedLoop(call, 8, { durationMs: 1000 }, "OK"); // warm-up
    const unloaded = await closedLoop(call, 1, { durationMs: STEP_MS }, "OK");
    const saturated = await closedLoop(call, 24, { durationMs: STEP_MS }, "OK");
    const steps: Step[] = [
      {
        load: "unloaded (1 caller)",
        offeredRps: Math.round(unloaded.rps),
        goodput: Math.round(unloaded.rps),
        okP50: round(unloaded.p50),
        okP99: round(unloaded.p99),
        statuses: unloaded.statuses,
      },
      {
        load: "saturated (24 callers)",
        offeredRps: Math.round(saturated.rps),
        goodput: Math.round(((saturated.statuses.OK ?? 0) / saturated.durationMs) * 1000),
        okP50: round(saturated.p50),
        okP99: round(saturated.p99),
        statuses: saturated.statuses,
      },
    ];
    for (const factor of [2, 5]) {
      steps.push(await openLoop(call, saturated.rps * factor, `${factor}x saturated`));
    }
    return { name, unloadedP99: unloaded.p99, steps };
  } finally {
    for (const c of clients) c.close();
    await child.stop();
  }
}

async function main() {
  const data = await generate(SERVER_URL, [20]);
  const quizId = data.levelQuiz.get(20) ?? "";
  try {
    const runs = [
      await measure("admission control (MAX_IN_FLIGHT = pool size, 10)", data.url, quizId),
      await measure("no admission control (MAX_IN_FLIGHT = 100000)", data.url, quizId, 100_000),
    ];
    const lines = [
      `# Overload: ListSessions over gRPC, ${STEP_MS} ms per step (${new Date().toISOString()})`,
      "",
      "Shared 2-core box: compare rows of one run. Latency of OK answers from their scheduled send time.",
      "",
    ];
    for (const run of runs) {
      lines.push(`## ${run.name}`, "");
      lines.push(
        "| load | offered/s | goodput/s | OK p50 ms | OK p99 ms | p99 / unloaded | answers |",
      );
      lines.push("|---|---:|---:|---:|---:|---:|---|");
      for (const s of run.steps) {
        const ratio = run.unloadedP99 > 0 ? (s.okP99 / run.unloadedP99).toFixed(1) : "-";
        lines.push(
          `| ${s.load} | ${s.offeredRps} | ${s.goodput} | ${s.okP50} | ${s.okP99} | ${ratio} | ${JSON.stringify(s.statuses)} |`,
        );
      }
      lines.push("");
    }
    const text = lines.join("\n");
    console.log(text);
    mkdirSync("bench/results", { recursive: true });
    const file = `bench/results/overload-${new Date().toISOString().replace(/[:.]/g, "-")}.md`;
    writeFileSync(file, `${text}\n`);
    console.log(`written: ${file}`);
  } finally {
    await data.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
