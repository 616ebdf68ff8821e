/**
 * `npm run bench:overload`: goodput and admitted latency of ListSessions
 * (Connect's binary protocol over HTTP/2, through the same HTTP/2 adapter,
 * interceptors and admission control as gRPC; its statuses, 200 or 503, let
 * h2load tell served calls from refused ones) past saturation, with admission
 * control as shipped (at most the pool's size), adaptive, and none
 * (BENCH_OVERLOAD_LIMITS picks others). Steps: the
 * unloaded p99 (one caller), the saturated rate (closed loop, half as many
 * callers again as may run at once: every slot stays busy, none is refused), the unloaded p99 again as the overload steps measure
 * it (the same open loop at a tenth of the saturated goodput), then open
 * loops at 2x and 5x the saturated goodput. h2load's open loop sends each
 * connection's requests in 10 ms ticks, and a caller that comes after a
 * pause finds the service asleep, so its unloaded p99 is higher than one
 * caller's in a closed loop: the report divides by both.
 * "Goodput" counts 200s per second; "admitted p99" is the p99 of 200s. The
 * load generator is h2load (Debian's nghttp2-client; a Node client used as
 * much CPU at 5x as the service) at a higher CPU priority than the service:
 * it stands for clients on other machines. BENCH_OVERLOAD_S seconds per step
 * (default 5): on a shared box, compare the rows of one run, not runs.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import { ListSessionsRequestSchema } from "../gen/practice/v1/practice_session_service_pb.js";
import { signToken } from "../src/auth/tokens.js";
import { type Child, freePort, startChild } from "./lib/children.js";
import { generate, MAIN_USER } from "./lib/data.js";
import { type H2loadResult, h2load, h2loadInstalled } from "./lib/h2load.js";
import { cpuMs } from "./lib/proc.js";
import { percentile } from "./lib/stats.js";

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const STEP_S = Number(process.env.BENCH_OVERLOAD_S ?? 5);
const SECRET = "bench-secret-bench-secret-bench-secret-0123";
const POOL_SIZE = 10;
/**
 * The admission settings to compare: "default" (the service's: at most the pool's size, 10),
 * "adaptive" (ADAPTIVE_ADMISSION=true), or a number N (MAX_IN_FLIGHT=N; 100000: none at all).
 */
const SETTINGS = (process.env.BENCH_OVERLOAD_LIMITS ?? "default,adaptive,100000").split(",");

/** The service's environment for one setting, and its name in the report. */
function setting(name: string): { env: Record<string, string>; label: string } {
  if (name === "default")
    return { env: {}, label: "as shipped: MAX_IN_FLIGHT = the pool's size (10)" };
  if (name === "adaptive") {
    return {
      env: { ADAPTIVE_ADMISSION: "true" },
      label: "ADAPTIVE_ADMISSION=true (at most 10, at least 3)",
    };
  }
  if (!/^\d+$/.test(name))
    throw new Error(`BENCH_OVERLOAD_LIMITS: "${name}" is not default, adaptive or a number`);
  return {
    env: { MAX_IN_FLIGHT: name },
    label:
      name === "100000"
        ? "MAX_IN_FLIGHT = 100000 (no admission control)"
        : `MAX_IN_FLIGHT = ${name}`,
  };
}
/** Connections of the open loops (each allows the server's 100 streams at once). */
const CONNECTIONS = 8;
/** BENCH_OVERLOAD_PROFILE=1: a CPU profile of each service run, in bench/results/profiles. */
const PROFILE = Boolean(process.env.BENCH_OVERLOAD_PROFILE);
const LIST = "/practice.v1.PracticeSessionService/ListSessions";

interface Step {
  load: string;
  offered: number;
  goodput: number;
  okP50: number;
  okP99: number;
  /** p50 of the refused (503) answers: how fast a caller learns to back off. */
  refusedP50: number;
  /** CPU while the step ran, in % of one core: the service, and h2load. */
  serverCpu: number;
  /** Calls answered 200 and 503 per second. */
  okRate: number;
  refusedRate: number;
  generatorCpu: number;
  answers: Record<string, number>;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

/** A step's row from h2load's answers and the service's CPU meanwhile. */
function step(load: string, result: H2loadResult, serverCpu: number, offered?: number): Step {
  const ok = result.byStatus.get(200) ?? [];
  const refused = result.byStatus.get(503) ?? [];
  const total = [...result.byStatus.values()].reduce((n, l) => n + l.length, 0);
  return {
    load,
    offered: Math.round(offered ?? total / result.durationS),
    goodput: Math.round(ok.length / result.durationS),
    okP50: round(percentile(ok, 50)),
    okP99: round(percentile(ok, 99)),
    refusedP50: round(percentile(refused, 50)),
    serverCpu: Math.round(serverCpu),
    okRate: ok.length / result.durationS,
    refusedRate: refused.length / result.durationS,
    generatorCpu: Math.round(result.cpuPercent),
    answers: Object.fromEntries([...result.byStatus].map(([s, l]) => [String(s), l.length])),
  };
}

/** The bench's call: ListSessions of the bench user's quiz, Connect binary, to `port`. */
async function listRequest(port: number, quizId: string) {
  return {
    url: `http://127.0.0.1:${port}${LIST}`,
    headers: {
      "content-type": "application/proto",
      "connect-protocol-version": "1",
      authorization: `Bearer ${await signToken(SECRET, MAIN_USER)}`,
    },
    body: toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId })),
  };
}

async function measure(name: string, dbUrl: string, quizId: string) {
  const { env, label } = setting(name);
  const maxInFlight = Number(env.MAX_IN_FLIGHT ?? POOL_SIZE);
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
      ...env,
      NODE_ENV: "production",
    },
    PROFILE ? ["--cpu-prof", "--cpu-prof-dir=bench/results/profiles"] : [],
  );
  try {
    const request = await listRequest(port, quizId);
    /** One step, with the service's CPU (% of a core) while it ran. */
    const run = async (clients: number, streams: number, durationS: number, rate?: number) => {
      const cpu0 = cpuMs(child.pid);
      const t0 = performance.now();
      const result = await h2load({
        ...request,
        clients,
        streams,
        durationS,
        ...(rate ? { rate } : {}),
      });
      return { result, cpu: ((cpuMs(child.pid) - cpu0) / (performance.now() - t0)) * 100 };
    };
    await run(8, 1, 1); // warm-up
    // Half as many again as the service runs at once: the waiting ones keep every slot busy
    // (with exactly as many, a slot idles while its caller turns around), none is refused.
    const callers = Math.min(maxInFlight + Math.ceil(maxInFlight / 2), 24);
    const unloaded = await run(1, 1, STEP_S);
    const saturated = await run(callers, 1, STEP_S);
    const steps = [
      step("unloaded (1 caller)", unloaded.result, unloaded.cpu),
      step(`saturated (${callers} callers)`, saturated.result, saturated.cpu),
    ];
    const saturatedGoodput = steps[1]?.goodput ?? 0;
    const light = await run(CONNECTIONS, 100, STEP_S, saturatedGoodput / 10);
    steps.push(step("unloaded (open loop, 0.1x)", light.result, light.cpu, saturatedGoodput / 10));
    for (const factor of [2, 5]) {
      const rate = saturatedGoodput * factor;
      const loaded = await run(CONNECTIONS, 100, STEP_S, rate);
      steps.push(step(`${factor}x saturated`, loaded.result, loaded.cpu, rate));
    }
    return { name: label, steps, admits: maxInFlight < 100_000 };
  } finally {
    await child.stop();
  }
}

/**
 * What a served and a refused call cost the service's CPU (µs), from the
 * saturated step and the 5x step (its served calls counted at the saturated
 * cost), and the goodput those costs allow at 5x's rate within the CPU the
 * service had when saturated: refusals take their share first.
 */
function costs(steps: Step[]): string {
  const saturated = steps[1];
  const fivefold = steps.find((s) => s.load.startsWith("5x"));
  if (!saturated || !fivefold || fivefold.refusedRate === 0) return "";
  const served = (saturated.serverCpu * 1e4) / saturated.okRate;
  const refused = (fivefold.serverCpu * 1e4 - fivefold.okRate * served) / fivefold.refusedRate;
  const answered = fivefold.okRate + fivefold.refusedRate;
  const ceiling = (saturated.serverCpu * 1e4 - answered * refused) / (served - refused);
  return (
    `Service CPU per served call (saturated): ${Math.round(served)} µs; per refused call (5x): ${Math.round(refused)} µs. ` +
    `At 5x's ${Math.round(answered)} calls/s, the saturated CPU serves at most ${Math.round(ceiling)}/s ` +
    `(${(ceiling / saturated.okRate).toFixed(2)} × saturated) once the rest are refused.`
  );
}

/**
 * CPU per call (µs) of bench/servers/refuse-all.ts, a bare Node HTTP/2 server
 * that refuses everything, under `rate` calls a second of the same request.
 */
async function refusalFloor(quizId: string, rate: number): Promise<number> {
  const port = await freePort();
  const child = await startChild("refuse-all", "bench/servers/refuse-all.ts", {
    PORT: String(port),
  });
  try {
    const request = await listRequest(port, quizId);
    const cpu0 = cpuMs(child.pid);
    const result = await h2load({
      ...request,
      rate,
      clients: CONNECTIONS,
      streams: 100,
      durationS: STEP_S,
    });
    const calls = [...result.byStatus.values()].reduce((n, l) => n + l.length, 0);
    return ((cpuMs(child.pid) - cpu0) * 1000) / calls;
  } finally {
    await child.stop();
  }
}

function report(runs: { name: string; steps: Step[]; admits: boolean }[], floorUs: number): string {
  const lines = [
    `# Overload: ListSessions (Connect binary over HTTP/2), ${STEP_S} s per step (${new Date().toISOString()})`,
    "",
    "Load from h2load at a higher CPU priority than the service; latency of 200s as h2load times them.",
    "Shared 2-core box (service, MariaDB and h2load): compare rows of one run.",
    "p99 ÷ unloaded: over one caller's closed loop / over the open loop at 0.1x (as the overload steps measure).",
    "",
  ];
  for (const run of runs) {
    const closedP99 = run.steps[0]?.okP99 ?? Number.NaN;
    const openP99 = run.steps.find((s) => s.load.includes("open loop"))?.okP99 ?? Number.NaN;
    lines.push(
      `## ${run.name}`,
      "",
      "| load | offered/s | goodput/s | × saturated | OK p50 ms | OK p99 ms | p99 ÷ unloaded (closed / open) | refused p50 ms | CPU % service / h2load | answers by status |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    );
    const saturated = run.steps[1]?.goodput ?? Number.NaN;
    for (const s of run.steps) {
      lines.push(
        `| ${s.load} | ${s.offered} | ${s.goodput} | ${(s.goodput / saturated).toFixed(2)} | ${s.okP50} | ${s.okP99} | ${(s.okP99 / closedP99).toFixed(1)} / ${(s.okP99 / openP99).toFixed(1)} | ${Number.isNaN(s.refusedP50) ? "-" : s.refusedP50} | ${s.serverCpu} / ${s.generatorCpu} | ${JSON.stringify(s.answers)} |`,
      );
    }
    // Without admission control the 503s are timeouts, not refusals: no cost to tell.
    lines.push("", run.admits ? costs(run.steps) : "", "");
  }
  lines.push(
    `A bare Node HTTP/2 server that refuses every call (bench/servers/refuse-all.ts), at the first setting's 5x rate: ${Math.round(floorUs)} µs of CPU per call.`,
  );
  return lines.join("\n");
}

async function main() {
  if (!h2loadInstalled()) {
    console.error("bench:overload needs h2load: apt-get install nghttp2-client");
    process.exit(1);
  }
  const data = await generate(SERVER_URL, [20]);
  const quizId = data.levelQuiz.get(20) ?? "";
  try {
    const runs = [];
    for (const name of SETTINGS) runs.push(await measure(name, data.url, quizId));
    const fivefold = runs[0]?.steps.find((s) => s.load.startsWith("5x"))?.offered ?? 0;
    const text = report(runs, await refusalFloor(quizId, fivefold));
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
