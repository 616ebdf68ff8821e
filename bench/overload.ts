/**
 * `npm run bench:overload`: goodput and admitted latency of ListSessions
 * (gRPC) past saturation, with admission control as shipped (adaptive, at
 * most the pool's size) and without it (a fixed MAX_IN_FLIGHT of 100,000:
 * every call queues); BENCH_OVERLOAD_LIMITS picks others. Steps: the
 * unloaded p99 (one caller), the saturated rate (closed loop, as many callers
 * as may run at once), then open loops at 2x and 5x the saturated goodput.
 * "Goodput" counts OK answers per second; "admitted p99" is the p99 of OK
 * answers, measured from each call's scheduled time. The load generator is a
 * bare node:http2 client at a higher CPU priority than the service (it stands
 * for clients on other machines). Short runs (BENCH_OVERLOAD_MS, default
 * 3000 per step): on a shared box, compare the rows of one run, not runs.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { setPriority } from "node:os";
import { create, toBinary } from "@bufbuild/protobuf";
import { ListSessionsRequestSchema } from "../gen/practice/v1/practice_session_service_pb.js";
import { signToken } from "../src/auth/tokens.js";
import { type Child, freePort, startChild } from "./lib/children.js";
import { generate, MAIN_USER } from "./lib/data.js";
import { H2GrpcClient } from "./lib/h2-grpc-client.js";
import { closedLoop } from "./lib/load.js";
import { cpuMs } from "./lib/proc.js";
import { percentile } from "./lib/stats.js";

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const STEP_MS = Number(process.env.BENCH_OVERLOAD_MS ?? 3000);
const SECRET = "bench-secret-bench-secret-bench-secret-0123";
const POOL_SIZE = 10;
/**
 * The admission settings to compare: 0 is the service's default (adaptive, at most the pool's
 * size), N a fixed MAX_IN_FLIGHT of N (100000: none); BENCH_OVERLOAD_LIMITS="0,3,100000".
 */
const IN_FLIGHT = (process.env.BENCH_OVERLOAD_LIMITS ?? "0,100000").split(",").map(Number);
/** Client connections the calls are spread over (each allows the server's 100 streams at once). */
const CONNECTIONS = 8;
const LIST = "/practice.v1.PracticeSessionService/ListSessions";

interface Step {
  load: string;
  /** CPU used while the step ran, in % of one core: the service, and this load generator. */
  serverCpu?: number;
  generatorCpu?: number;
  offeredRps: number;
  goodput: number;
  okP50: number;
  /** p50 of the refused answers: how fast a caller learns to back off. */
  shedP50?: number;
  okP99: number;
  statuses: Record<string, number>;
}

/** Open loop at `rate`/s for STEP_MS; latency from the scheduled send time. */
async function openLoop(call: () => Promise<string>, rate: number, label: string): Promise<Step> {
  const ok: number[] = [];
  const refused: number[] = [];
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
          else refused.push(performance.now() - scheduled);
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
    shedP50: round(
      percentile(
        refused.sort((a, b) => a - b),
        50,
      ),
    ),
    okP99: round(percentile(sorted, 99)),
    statuses,
  };
}

/** Starts measuring CPU: the returned function gives % of a core of the service and of this process. */
function cpuMeter(pid: number): () => { serverCpu: number; generatorCpu: number } {
  const t0 = performance.now();
  const [s0, g0] = [cpuMs(pid), cpuMs(process.pid)];
  return () => {
    const ms = performance.now() - t0;
    return {
      serverCpu: Math.round(((cpuMs(pid) - s0) / ms) * 100),
      generatorCpu: Math.round(((cpuMs(process.pid) - g0) / ms) * 100),
    };
  };
}

const round = (ms: number) => Math.round(ms * 10) / 10;

async function measure(name: string, dbUrl: string, quizId: string, maxInFlight?: number) {
  const port = await freePort();
  const child: Child = await startChild(
    name,
    "src/main.ts",
    {
      PORT: String(port),
      METRICS_PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: dbUrl,
      JWT_SECRET: SECRET,
      LOG_LEVEL: "error",
      DB_POOL_SIZE: String(POOL_SIZE),
      ...(maxInFlight ? { MAX_IN_FLIGHT: String(maxInFlight), ADAPTIVE_ADMISSION: "false" } : {}),
      NODE_ENV: "production",
    },
    process.env.BENCH_OVERLOAD_PROFILE
      ? ["--cpu-prof", "--cpu-prof-dir=bench/results/profiles"]
      : [],
  );
  // The load generator stands for clients on other machines: it runs ahead of
  // the service for the CPU (when allowed to: root), so that its own delays
  // do not count as the service's latency.
  try {
    setPriority(child.pid, 0);
  } catch {}
  const auth = { authorization: `Bearer ${await signToken(SECRET, MAIN_USER)}` };
  const clients = Array.from(
    { length: CONNECTIONS },
    () => new H2GrpcClient(`127.0.0.1:${port}`, auth),
  );
  try {
    const body = toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId }));
    let n = 0;
    const call = () => (clients[n++ % CONNECTIONS] as H2GrpcClient).call(LIST, body);
    await closedLoop(call, 8, { durationMs: 1000 }, "OK"); // warm-up
    // As many callers as the service runs at once: more would only be refused (and
    // retry at once), fewer would leave it idle.
    const callers = Math.min(maxInFlight || POOL_SIZE, 24);
    let cpu = cpuMeter(child.pid);
    const unloaded = await closedLoop(call, 1, { durationMs: STEP_MS }, "OK");
    const unloadedCpu = cpu();
    cpu = cpuMeter(child.pid);
    // Refused callers back off 5 ms, as clients with a retry policy do.
    const polite = async () => {
      const status = await call();
      if (status !== "OK") await new Promise((r) => setTimeout(r, 5));
      return status;
    };
    const saturated = await closedLoop(polite, callers, { durationMs: STEP_MS }, "OK");
    const saturatedCpu = cpu();
    // The rate of OK answers: refused ones (the callers retry at once) are not capacity.
    const saturatedGoodput = ((saturated.statuses.OK ?? 0) / saturated.durationMs) * 1000;
    const steps: Step[] = [
      {
        load: "unloaded (1 caller)",
        offeredRps: Math.round(unloaded.rps),
        goodput: Math.round(unloaded.rps),
        okP50: round(unloaded.p50),
        okP99: round(unloaded.p99),
        statuses: unloaded.statuses,
        ...unloadedCpu,
      },
      {
        load: `saturated (${callers} callers)`,
        offeredRps: Math.round(saturated.rps),
        goodput: Math.round(saturatedGoodput),
        okP50: round(saturated.p50),
        okP99: round(saturated.p99),
        statuses: saturated.statuses,
        ...saturatedCpu,
      },
    ];
    for (const factor of [2, 5]) {
      const cpu = cpuMeter(child.pid);
      const step = await openLoop(call, saturatedGoodput * factor, `${factor}x saturated`);
      steps.push({ ...step, ...cpu() });
    }
    const goaways = clients.map((c) => c.goaways);
    return { name, unloadedP99: unloaded.p99, steps, goaways };
  } finally {
    for (const c of clients) c.close();
    await child.stop();
  }
}

async function main() {
  try {
    setPriority(-10);
  } catch {
    console.warn("could not raise the load generator's priority: its delays count as latency");
  }
  const data = await generate(SERVER_URL, [20]);
  const quizId = data.levelQuiz.get(20) ?? "";
  try {
    const runs = [];
    for (const limit of IN_FLIGHT) {
      const name = limit
        ? `fixed MAX_IN_FLIGHT = ${limit} (ADAPTIVE_ADMISSION=false)`
        : "admission control as shipped (adaptive, at most the pool's size: 10)";
      runs.push(await measure(name, data.url, quizId, limit));
    }
    const lines = [
      `# Overload: ListSessions over gRPC, ${STEP_MS} ms per step (${new Date().toISOString()})`,
      "",
      "Shared 2-core box: compare rows of one run. Latency of OK answers from their scheduled send time.",
      "",
    ];
    for (const run of runs) {
      lines.push(`## ${run.name}`, "");
      lines.push(
        "| load | offered/s | goodput/s | OK p50 ms | OK p99 ms | p99 / unloaded | refused p50 ms | CPU % service / generator | answers |",
      );
      lines.push("|---|---:|---:|---:|---:|---:|---:|---:|---|");
      for (const s of run.steps) {
        const ratio = run.unloadedP99 > 0 ? (s.okP99 / run.unloadedP99).toFixed(1) : "-";
        lines.push(
          `| ${s.load} | ${s.offeredRps} | ${s.goodput} | ${s.okP50} | ${s.okP99} | ${ratio} | ${s.shedP50 ?? "-"} | ${s.serverCpu ?? "-"} / ${s.generatorCpu ?? "-"} | ${JSON.stringify(s.statuses)} |`,
        );
      }
      lines.push(
        "",
        `GOAWAYs received by the client connections, by code: ${JSON.stringify(run.goaways)}`,
        "",
      );
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
