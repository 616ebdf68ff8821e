/**
 * `npm run bench`: ListSessions (first page of 20, of a user's 1,000
 * sessions) over each transport, next to a hand-written server doing the
 * same on the same data:
 *   REST          vs bare Fastify + mysql2 (bench/servers/bare-fastify.ts)
 *   gRPC          vs @grpc/grpc-js          (bench/servers/grpc-js.ts), with the
 *                 unary short path on and off (RPC_SHORT_PATH); and grpc-js vs
 *                 the same work on node:http2 alone (bench/servers/raw-h2.ts),
 *                 the ceiling of any gRPC server on Node
 *   Connect JSON  vs REST
 * Closed loops at several concurrencies; the method is in BENCHMARKS.md.
 *
 * BENCH_ABLATION=1 (`npm run bench:ablation`): instead, REST and gRPC list on
 * the same service under other runtimes (bench/lib/variants.ts: Node 20, an
 * older protobuf-es), each against the current one, at 16 callers.
 *
 * BENCH_TRACING=1 (`npm run bench:tracing`): instead, REST and gRPC list on the
 * service with OpenTelemetry off, on at ratio 1.0 exporting to a local OTLP
 * endpoint (bench/lib/otlp-sink.ts), and on at ratio 0.01, each against off,
 * at 16 callers; plus the no-op API's cost of a use-case span in this process.
 *
 * BENCH_QUICK=1: one round of 1 s at 16 callers (checks it runs end to end).
 * BENCH_ONLY=regex runs only the targets whose names match (for a profile of one).
 * BENCH_BEFORE=/path/to/checkout adds REST, Connect JSON and gRPC on that
 * checkout's build (npm ci and npm run build there first), beside this one's.
 * BENCH_RATE=N: each target is offered N calls/s (16 connections or streams)
 * instead of closed loops: every target then does the same work in the same
 * time, so CPU per call compares without the batching a faster target gets.
 * BENCH_FRESH=1: every service is started again before each round, so that
 * no one process's luck (copies of one build differ by ±15% in CPU per call
 * here) rides on every round of a comparison.
 * BENCH_WARM_MS: how long each target is called before it is measured (default
 * 15 s; again after each restart with BENCH_FRESH).
 * BENCH_DURATION_MS, BENCH_ROUNDS, BENCH_CONCURRENCIES override; BENCH_BUSY_CORE=1
 * keeps one core busy meanwhile; BENCH_DATABASE_URL names the MySQL server.
 */
import { create, toJsonString } from "@bufbuild/protobuf";
import { ListSessionsResponseSchema } from "../gen/practice/v1/practice_session_service_pb.js";
import { inUseCaseSpan } from "../src/app/use-case-span.js";
import { signToken } from "../src/auth/tokens.js";
import { compileJsonWriter } from "../src/rpc/proto-json.js";
import { sessionToProto } from "../src/rpc/to-proto.js";
import {
  type Child,
  log,
  type Runtime,
  SECRET,
  startBaseline,
  startService,
} from "./lib/children.js";
import { generate, MAIN_USER } from "./lib/data.js";
import {
  BEFORE,
  HISTORY,
  type HttpList,
  LIST,
  listCalls,
  ONE_USER,
  tracingAt,
} from "./lib/list-calls.js";
import {
  closedLoop,
  grpcRequest,
  H2Client,
  h2load,
  hasH2load,
  httpLoad,
  openLoop,
} from "./lib/load.js";
import { OtlpSink } from "./lib/otlp-sink.js";
import { busyCore, cpuMs } from "./lib/proc.js";
import { writeReport } from "./lib/report.js";
import { type LoadResult, median } from "./lib/stats.js";
import { ablationRuntimes } from "./lib/variants.js";

const env = process.env;
const QUICK = env.BENCH_QUICK === "1";
const SERVER_URL = env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const DURATION_MS = Number(env.BENCH_DURATION_MS ?? (QUICK ? 1000 : 4000));
const ROUNDS = Number(env.BENCH_ROUNDS ?? (QUICK ? 1 : 5));
const ABLATION = env.BENCH_ABLATION === "1";
const TRACING = env.BENCH_TRACING === "1";
const RATE = Number(env.BENCH_RATE ?? 0);
/** Callers of a closed loop, or with BENCH_RATE the connections (REST) it is offered over. */
const RATE_CONNECTIONS = 16;
const CONCURRENCIES = RATE
  ? [RATE_CONNECTIONS]
  : (env.BENCH_CONCURRENCIES ?? (QUICK || ABLATION || TRACING ? "16" : "1,16,64"))
      .split(",")
      .map(Number);
const FRESH = env.BENCH_FRESH === "1";
/**
 * V8 compiles a service's hot code over its first ten thousand or so calls:
 * CPU per call measured earlier counts the compiling too (here a list call
 * measured after 4 s of calls cost 1.4 times what it does after 20 s), and
 * more of it the more code a call runs.
 */
const WARM_MS = Number(env.BENCH_WARM_MS ?? (QUICK ? 0 : 15_000));

/** The services of this run, to start again before each round (BENCH_FRESH). */
const services: (() => Promise<void>)[] = [];

/** startService, as a Child whose process BENCH_FRESH replaces before each round. */
async function service(url: string, vars: Record<string, string>, runtime?: Runtime) {
  const child: Child = { ...(await startService(url, vars, runtime)) };
  let current = { ...child };
  services.push(async () => {
    await current.stop();
    current = await startService(url, vars, runtime);
    child.pid = current.pid;
    child.port = current.port;
  });
  child.stop = () => current.stop();
  return child;
}

interface Target {
  name: string;
  /** The process charged with the CPU. */
  server: () => Child;
  run(concurrency: number, durationMs?: number): Promise<LoadResult>;
}

interface Row {
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerCall: number;
  errors: number;
}

async function main(): Promise<void> {
  const stopBusy = busyCore();
  const data = await generate(SERVER_URL, [HISTORY]);
  const quizId = data.levelQuiz.get(HISTORY) ?? "";
  const token = await signToken(SECRET, MAIN_USER, { ttlSeconds: 86_400 });
  const children: Child[] = [];
  const sink = new OtlpSink();
  try {
    const { rest, connectJson, grpcMessage } = listCalls(quizId);
    const auth = { authorization: `Bearer ${token}` };
    const http = (name: string, server: Child, req: HttpList): Target => ({
      name,
      server: () => server,
      run: (c, durationMs = DURATION_MS) =>
        httpLoad({
          ...req,
          port: server.port,
          headers: { ...auth, ...req.headers },
          connections: RATE ? RATE_CONNECTIONS : c,
          rate: RATE || undefined,
          durationMs,
        }),
    });
    // gRPC in two shapes with h2load when it is here (Debian: nghttp2-client): c connections of
    // one stream each, and one connection of c streams; else one connection of c streams from
    // this process.
    const shapes = hasH2load && !RATE ? [" (c conns × 1 stream)", " (1 conn × c streams)"] : [""];
    const grpcShapes = (name: string, server: Child): Target[] =>
      shapes.map((shape) => {
        const request = grpcRequest(LIST, grpcMessage, token);
        return {
          name: `${name}${shape}`,
          server: () => server,
          run: async (c, durationMs = DURATION_MS) => {
            if (shape !== "") {
              const connections = shape.includes("c conns") ? c : 1;
              return h2load(request, {
                port: server.port,
                connections,
                streams: c / connections,
                durationMs,
              });
            }
            // One connection, as a gRPC client keeps; its streams carry the callers.
            const client = new H2Client(server.port);
            try {
              const call = () => client.call(request);
              if (RATE) return await openLoop(call, RATE, durationMs, "OK");
              return await closedLoop(call, c, durationMs, "OK");
            } finally {
              client.close();
            }
          },
        };
      });
    /** Each shape of `a` beside the same shape of `b`. */
    const grpcPairs = (a: string, b: string): [string, string][] =>
      shapes.map((shape) => [`${a}${shape}`, `${b}${shape}`]);
    const targets: Target[] = [];
    const pairs: [string, string][] = [];
    if (TRACING) {
      const endpoint = await sink.start();
      const variants: [string, Record<string, string>][] = [
        ["tracing off", {}],
        ["tracing on, ratio 1.0", tracingAt(endpoint, "1.0")],
        ["tracing on, ratio 0.01", tracingAt(endpoint, "0.01")],
      ];
      for (const [label, vars] of variants) {
        const svc = await service(data.url, { ...ONE_USER, ...vars });
        children.push(svc);
        targets.push(http(`REST (${label})`, svc, rest), ...grpcShapes(`gRPC (${label})`, svc));
        if (label === "tracing off") continue;
        pairs.push(
          [`REST (${label})`, "REST (tracing off)"],
          ...grpcPairs(`gRPC (${label})`, "gRPC (tracing off)"),
        );
      }
    } else if (ABLATION) {
      const runtimes = ablationRuntimes();
      const base = runtimes[0]?.label;
      for (const v of runtimes) {
        const svc = await service(data.url, ONE_USER, v.runtime);
        children.push(svc);
        targets.push(http(`REST ${v.label}`, svc, rest), ...grpcShapes(`gRPC ${v.label}`, svc));
        if (v.label === base) continue;
        pairs.push(
          [`REST ${v.label}`, `REST ${base}`],
          ...grpcPairs(`gRPC ${v.label}`, `gRPC ${base}`),
        );
      }
    } else {
      const svc = await service(data.url, ONE_USER);
      // The same service with every RPC on Connect's own handler.
      const connectOnly = await service(data.url, { ...ONE_USER, RPC_SHORT_PATH: "off" });
      const bare = await startBaseline("bare-fastify", data.url);
      const grpcJs = await startBaseline("grpc-js", data.url);
      const rawH2 = await startBaseline("raw-h2", data.url);
      children.push(svc, connectOnly, bare, grpcJs, rawH2);
      targets.push(
        http("REST (service)", svc, rest),
        http("bare Fastify + mysql2", bare, rest),
        http("Connect JSON (service)", svc, connectJson),
        http("Connect JSON (service, RPC_SHORT_PATH=off)", connectOnly, connectJson),
        ...grpcShapes("gRPC (service)", svc),
        ...grpcShapes("gRPC (service, RPC_SHORT_PATH=off)", connectOnly),
        ...grpcShapes("@grpc/grpc-js server", grpcJs),
        ...grpcShapes("node:http2 alone (ceiling)", rawH2),
      );
      pairs.push(
        ["REST (service)", "bare Fastify + mysql2"],
        ...grpcPairs("gRPC (service)", "@grpc/grpc-js server"),
        ...grpcPairs("gRPC (service)", "node:http2 alone (ceiling)"),
        ...grpcPairs("gRPC (service, RPC_SHORT_PATH=off)", "@grpc/grpc-js server"),
        ["Connect JSON (service)", "REST (service)"],
        ["Connect JSON (service, RPC_SHORT_PATH=off)", "REST (service)"],
        ...grpcPairs("node:http2 alone (ceiling)", "@grpc/grpc-js server"),
      );
    }
    if (env.BENCH_BEFORE) {
      // Another checkout's build (its dist/ and node_modules), on the same data: before and after in one run.
      const before = await service(data.url, { ...ONE_USER, ...BEFORE }, { cwd: env.BENCH_BEFORE });
      children.push(before);
      targets.push(
        http("REST (before)", before, rest),
        http("Connect JSON (before)", before, connectJson),
        ...grpcShapes("gRPC (before)", before),
      );
      pairs.push(
        ["REST (service)", "REST (before)"],
        ["Connect JSON (service)", "Connect JSON (before)"],
        ...grpcPairs("gRPC (service)", "gRPC (before)"),
      );
    }
    if (env.BENCH_ONLY) {
      const only = new RegExp(env.BENCH_ONLY);
      targets.splice(0, targets.length, ...targets.filter((t) => only.test(t.name)));
      // Only the ratios of targets that still run.
      pairs.splice(0, pairs.length, ...pairs.filter((p) => p.every((name) => only.test(name))));
    }
    log("sanity: one short run of each target");
    for (const t of targets) {
      const r = await t.run(1);
      if (r.errors > 0)
        throw new Error(`${t.name}: unexpected answers ${JSON.stringify(r.statuses)}`);
    }
    const results = new Map<string, Row[]>();
    for (let round = 0; round < ROUNDS; round++) {
      if (FRESH && round > 0) for (const restart of services) await restart();
      if (WARM_MS > 0 && (round === 0 || FRESH)) {
        for (const t of targets) await t.run(CONCURRENCIES[0] ?? 16, WARM_MS);
      }
      for (const c of CONCURRENCIES) {
        for (const t of targets) {
          const pid = t.server().pid;
          const cpu0 = cpuMs(pid);
          const r = await t.run(c);
          const cpu = cpuMs(pid) - cpu0;
          const key = `${t.name}|${c}`;
          // Only answered calls count: a shed call (503) is cheap and would flatter both.
          const ok = r.requests - r.errors;
          const row = {
            rps: (ok / r.durationMs) * 1000,
            p50: r.p50,
            p99: r.p99,
            cpuUsPerCall: (cpu * 1000) / Math.max(1, ok),
            errors: r.errors,
          };
          results.set(key, [...(results.get(key) ?? []), row]);
          log(
            `round ${round + 1} c=${c} ${t.name}: ${Math.round(row.rps)}/s p99 ${r.p99.toFixed(1)} ms`,
          );
        }
      }
    }
    const lines = [
      `# ${ABLATION ? "Ablation" : TRACING ? "Tracing" : "Throughput"}: ListSessions, first page of 20 of ${HISTORY} sessions`,
      "",
      `${DURATION_MS} ms per run, median of ${ROUNDS} round(s); calls/s and CPU per call count answered calls only (errors: the others, e.g. shed with 503); CPU is the server process's.`,
      env.BENCH_BUSY_CORE === "1" ? "Another process kept one core busy throughout." : "",
      "",
      `| ${RATE ? "offered calls/s" : "callers"} | target | calls/s | p50 ms | p99 ms | server CPU µs/call | errors |`,
      "|---:|---|---:|---:|---:|---:|---:|",
    ];
    const med = (rows: Row[], k: keyof Row) => median(rows.map((r) => r[k]));
    for (const c of CONCURRENCIES) {
      for (const t of targets) {
        const rows = results.get(`${t.name}|${c}`) ?? [];
        lines.push(
          `| ${RATE || c} | ${t.name} | ${Math.round(med(rows, "rps"))} | ${med(rows, "p50").toFixed(2)} | ${med(rows, "p99").toFixed(2)} | ${Math.round(med(rows, "cpuUsPerCall"))} | ${rows.reduce((n, r) => n + r.errors, 0)} |`,
        );
      }
    }
    lines.push("", ratios(results, pairs, CONCURRENCIES));
    lines.push("", ratios(results, pairs, CONCURRENCIES, "paired"));
    // On a shared machine the least CPU a call took in any round is the
    // steadiest figure of what it costs: others' load only ever adds to it.
    if (TRACING) lines.push("", ratios(results, pairs, CONCURRENCIES, "least"));
    if (TRACING) {
      lines.push(
        "",
        `- Spans exported to the local endpoint: ${sink.requests} requests, ${Math.round(sink.bytes / 1024)} KiB.`,
        await noopSpanCost(),
      );
    } else if (!ABLATION) lines.push("", jsonPageCost());
    writeReport(
      ABLATION ? "ablation" : TRACING ? "tracing" : "throughput",
      lines.join("\n"),
      Object.fromEntries(results),
    );
  } finally {
    for (const child of children) await child.stop();
    await sink.close();
    await data.drop();
    stopBusy();
  }
}

/**
 * What tracing off leaves on a call's path: the use-case span on
 * OpenTelemetry's no-op API (this process starts no SDK), per call.
 */
async function noopSpanCost(): Promise<string> {
  const run = () => inUseCaseSpan("listSessions", async () => 1);
  for (let i = 0; i < 20_000; i++) await run();
  const start = performance.now();
  for (let i = 0; i < 100_000; i++) await run();
  const us = ((performance.now() - start) * 1000) / 100_000;
  const bare = performance.now();
  for (let i = 0; i < 100_000; i++) await (async () => 1)();
  const bareUs = ((performance.now() - bare) * 1000) / 100_000;
  return `- Tracing off, in this process: a use case wrapped in its span on the no-op API ${us.toFixed(2)} µs, unwrapped ${bareUs.toFixed(2)} µs.`;
}

/** One page of 20 sessions as JSON, in this process: protobuf-es, then rpc/proto-json.ts. */
function jsonPageCost(): string {
  const at = Date.parse("2026-05-01T10:00:00.123Z");
  const sessions = Array.from({ length: 20 }, (_, i) =>
    sessionToProto({
      id: `0194f1c2-0000-7000-8000-${String(i).padStart(12, "0")}`,
      quizId: "0194f1c2-0000-7000-8000-000000000abc",
      startedAt: new Date(at - i * 60_000),
      completedAt: new Date(at - i * 60_000 + 30_000),
      mode: "full",
      expiresAt: null,
      totalQuestions: 10,
      correctAnswers: 7,
      scorePercentage: 70,
      answeredQuestions: 10,
    }),
  );
  const page = create(ListSessionsResponseSchema, { sessions, nextCursor: "next" });
  const writer = compileJsonWriter(ListSessionsResponseSchema) as (m: object) => string;
  const us = (write: () => string) => {
    for (let i = 0; i < 20_000; i++) write();
    const start = performance.now();
    for (let i = 0; i < 50_000; i++) write();
    return ((performance.now() - start) * 1000) / 50_000;
  };
  const slow = us(() => toJsonString(ListSessionsResponseSchema, page));
  const fast = us(() => writer(page));
  return `- JSON of one page of 20 sessions: protobuf-es toJsonString ${slow.toFixed(1)} µs, rpc/proto-json.ts ${fast.toFixed(1)} µs (same bytes).`;
}

/**
 * The ratios the baselines are for, at each concurrency: calls/s, and CPU per
 * call; of the rounds' medians, or ("least") of their best (most calls/s, least CPU).
 */
function ratios(
  results: Map<string, Row[]>,
  pairs: [string, string][],
  concurrencies: number[],
  of: "median" | "least" | "paired" = "median",
) {
  const med = (name: string, c: number, k: keyof Row) => {
    const values = (results.get(`${name}|${c}`) ?? []).map((r) => r[k]);
    if (of === "median") return median(values);
    return k === "rps" ? Math.max(...values) : Math.min(...values);
  };
  // Paired: each round's ratio, the two measured minutes apart at most.
  const paired = (a: string, b: string, c: number, k: keyof Row) => {
    const bs = results.get(`${b}|${c}`) ?? [];
    return (results.get(`${a}|${c}`) ?? []).map((r, i) => r[k] / (bs[i]?.[k] ?? Number.NaN));
  };
  // Round by round: the median ratio, and the middle half of the rounds' ratios (the noise).
  const ratio = (a: string, b: string, c: number, k: keyof Row) => {
    if (of !== "paired") return (med(a, c, k) / med(b, c, k)).toFixed(2);
    const rs = paired(a, b, c, k).sort((x, y) => x - y);
    const at = (q: number) => (rs[Math.round(q * (rs.length - 1))] ?? Number.NaN).toFixed(2);
    return rs.length < 4
      ? median(rs).toFixed(2)
      : `${median(rs).toFixed(2)} (${at(0.25)}–${at(0.75)})`;
  };
  return pairs
    .map(
      ([a, b]) =>
        `- ${of === "least" ? "best rounds: " : of === "paired" ? "round by round: " : ""}${a} ÷ ${b}: ${concurrencies.map((c) => `${ratio(a, b, c, "rps")} calls/s, ${ratio(a, b, c, "cpuUsPerCall")} CPU/call at ${c}`).join("; ")}`,
    )
    .join("\n");
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
