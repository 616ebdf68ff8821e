/**
 * `npm run bench:grpc`: what each transport costs against a hand-written
 * @grpc/grpc-js server doing the same use case on the same data (issue 14).
 * ListSessions (first page of 20 of a user's 50 sessions) and StartSession
 * (resume, 5 answers), at c=1, 16 and 64: req/s, p50/p99 and server CPU per
 * request from /proc, every target interleaved in each round (medians of
 * BENCH_ROUNDS), then an open loop on every transport (gRPC and the grpc-js
 * baseline at one rate) and the goal's ratios. See BENCHMARKS.md; results go
 * to bench/results/grpc-<time>.md.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import type * as grpc from "@grpc/grpc-js";
import {
  ListSessionsRequestSchema,
  StartSessionRequestSchema,
} from "../gen/practice/v1/practice_session_service_pb.js";
import { signToken } from "../src/auth/tokens.js";
import { type Child, freePort, startChild } from "./lib/children.js";
import { generate, MAIN_USER, RESUME_USER } from "./lib/data.js";
import { type Bound, bearer, closedLoop, GrpcLoadClient, httpLoad, openLoop } from "./lib/load.js";
import { cpuMs } from "./lib/proc.js";
import { type LoadResult, median } from "./lib/stats.js";

const env = process.env;
const QUICK = env.BENCH_QUICK === "1";
const SERVER_URL = env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const DURATION_MS = Number(env.BENCH_DURATION_MS ?? (QUICK ? 1000 : 3000));
const ROUNDS = Number(env.BENCH_ROUNDS ?? (QUICK ? 1 : 5));
const CONCURRENCIES = (env.BENCH_CONCURRENCIES ?? "1,16,64").split(",").map(Number);
/** A checkout of another commit (e.g. main) to run beside this one: before/after in one run. */
const BASELINE_DIR = env.BENCH_BASELINE_DIR;
const HISTORY = 50;
const SECRET = "bench-secret-bench-secret-bench-secret-0123";
const LIST_PATH = "/practice.v1.PracticeSessionService/ListSessions";
const START_PATH = "/practice.v1.PracticeSessionService/StartSession";

function log(msg: string): void {
  console.error(`[bench:grpc ${new Date().toISOString().slice(11, 19)}] ${msg}`);
}

interface Target {
  name: string;
  child: Child;
  run(scenario: Scenario, c: number, bound: Bound, rate?: number): Promise<LoadResult>;
}

interface Scenario {
  name: string;
  path: string;
  restMethod: "GET" | "POST";
  restPath: string;
  restStatus: number;
  json: string;
  bin: Buffer;
  token: string;
}

interface Row {
  scenario: string;
  target: string;
  c: number | string;
  round: number;
  rps: number;
  p50: number;
  p99: number;
  cpuUs: number;
  errors: number;
}

/** gRPC load over `conns` connections (one grpc-js channel each), calls spread round-robin. */
function grpcTarget(name: string, child: Child, conns: number): Target {
  const clients = Array.from(
    { length: conns },
    (_, i) =>
      // A distinct option per channel keeps grpc-js from sharing one subchannel.
      new GrpcLoadClient(`127.0.0.1:${child.port}`, { "grpc.bench_channel": i }),
  );
  const md = new Map<string, grpc.Metadata>();
  return {
    name,
    child,
    run(s, c, bound, rate) {
      const m = md.get(s.token) ?? bearer(s.token);
      md.set(s.token, m);
      const n = Math.min(conns, c);
      const call = (i: number) => (clients[i % n] as GrpcLoadClient).call(s.path, s.bin, m);
      return rate === undefined
        ? closedLoop(call, c, bound, "OK")
        : openLoop(call, rate, "durationMs" in bound ? bound.durationMs : 10_000, "OK");
    },
  };
}

function httpTarget(name: string, child: Child, kind: "rest" | "json" | "proto"): Target {
  return {
    name,
    child,
    run(s, c, bound, rate) {
      const auth = { authorization: `Bearer ${s.token}` };
      const rest = kind === "rest";
      return httpLoad({
        url: `http://127.0.0.1:${child.port}${rest ? s.restPath : s.path}`,
        method: rest ? s.restMethod : "POST",
        headers: rest
          ? auth
          : {
              ...auth,
              "content-type": kind === "json" ? "application/json" : "application/proto",
              "connect-protocol-version": "1",
            },
        body: rest ? undefined : kind === "json" ? s.json : s.bin,
        connections: c,
        bound,
        overallRate: rate,
        expect: rest ? s.restStatus : 200,
      });
    },
  };
}

async function service(name: string, dir: string, dbUrl: string): Promise<Child> {
  return startChild(name, `${dir}src/main.ts`, {
    PORT: String(await freePort()),
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: dbUrl,
    JWT_SECRET: SECRET,
    LOG_LEVEL: "warn",
    DB_POOL_SIZE: "10",
    // This bench compares transports, not overload behaviour (bench:overload does): with the
    // default (the pool's size) admission sheds most calls at c=64, and the grpc-js target
    // has no admission control to match.
    MAX_IN_FLIGHT: "100000",
    ADAPTIVE_ADMISSION: "false",
    NODE_ENV: "production",
  });
}

async function main(): Promise<void> {
  log(`${DURATION_MS} ms per run, ${ROUNDS} rounds, c=${CONCURRENCIES.join(",")}`);
  const data = await generate(SERVER_URL, [HISTORY]);
  const children: Child[] = [];
  const rows: Row[] = [];
  try {
    const svc = await service("service", "", data.url);
    children.push(svc);
    const base = BASELINE_DIR ? await service("baseline", `${BASELINE_DIR}/`, data.url) : undefined;
    if (base) children.push(base);
    const gjs = await startChild("grpc-js", "bench/servers/grpc-js.ts", {
      PORT: String(await freePort()),
      METRICS_PORT: "0",
      DATABASE_URL: data.url,
      JWT_SECRET: SECRET,
      DB_POOL_SIZE: "10",
    });
    children.push(gjs);

    const quizId = data.levelQuiz.get(HISTORY) as string;
    const scenarios: Scenario[] = [
      {
        name: `list (first page of ${HISTORY})`,
        path: LIST_PATH,
        restMethod: "GET",
        restPath: `/quizzes/${quizId}/sessions`,
        restStatus: 200,
        json: JSON.stringify({ quizId }),
        bin: Buffer.from(
          toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId })),
        ),
        token: await signToken(SECRET, MAIN_USER, { ttlSeconds: 86_400 }),
      },
      {
        name: "start (resume)",
        path: START_PATH,
        restMethod: "POST",
        restPath: `/quizzes/${data.startQuiz}/sessions`,
        restStatus: 200,
        json: JSON.stringify({ quizId: data.startQuiz }),
        bin: Buffer.from(
          toBinary(
            StartSessionRequestSchema,
            create(StartSessionRequestSchema, { quizId: data.startQuiz }),
          ),
        ),
        token: await signToken(SECRET, RESUME_USER, { ttlSeconds: 86_400 }),
      },
    ];
    const targets: Target[] = [
      httpTarget("REST (HTTP/1.1)", svc, "rest"),
      httpTarget("Connect JSON (HTTP/1.1)", svc, "json"),
      httpTarget("Connect binary (HTTP/1.1)", svc, "proto"),
      grpcTarget("gRPC, 1 conn", svc, 1),
      grpcTarget("gRPC, c conns", svc, 64),
      grpcTarget("grpc-js server, 1 conn", gjs, 1),
      grpcTarget("grpc-js server, c conns", gjs, 64),
      ...(base
        ? [
            httpTarget("baseline: Connect JSON", base, "json"),
            grpcTarget("baseline: gRPC, 1 conn", base, 1),
          ]
        : []),
    ];
    const measure = async (s: Scenario, t: Target, c: number, round: number, rate?: number) => {
      const bound = { durationMs: DURATION_MS };
      const cpu0 = cpuMs(t.child.pid);
      const load = await t.run(s, c, bound, rate);
      const cpuUs = ((cpuMs(t.child.pid) - cpu0) * 1000) / Math.max(1, load.requests);
      const row: Row = {
        scenario: s.name,
        target: t.name,
        c: rate === undefined ? c : `open ${Math.round(rate)}/s`,
        round,
        rps: load.rps,
        p50: load.p50,
        p99: load.p99,
        cpuUs,
        errors: load.errors,
      };
      rows.push(row);
      const errs = load.errors ? ` ERRORS ${JSON.stringify(load.statuses)}` : "";
      log(
        `${s.name} ${t.name} c=${row.c} r${round}: ${load.rps.toFixed(0)} req/s p50 ${load.p50.toFixed(2)} p99 ${load.p99.toFixed(2)} ms cpu ${cpuUs.toFixed(0)} µs${errs}`,
      );
    };

    for (const s of scenarios) {
      for (const t of targets) await t.run(s, 16, { durationMs: Math.min(1000, DURATION_MS) });
    }
    for (let round = 1; round <= ROUNDS; round++) {
      for (const s of scenarios) {
        for (const c of CONCURRENCIES) {
          // Rotate the order each round so no target always runs first.
          const order = targets.map((_, i) => targets[(i + round) % targets.length] as Target);
          for (const t of order) {
            if (t.name.endsWith("c conns") && c === 1) continue;
            await measure(s, t, c, round);
          }
        }
      }
    }
    // Open loop on every transport: gRPC and grpc-js at one rate, 70% of grpc-js's median
    // c=16 rate (same work offered to both); REST and Connect each at 70% of their own.
    const list = scenarios[0] as Scenario;
    const c16 = (name: string) =>
      median(
        rows
          .filter((r) => r.scenario === list.name && r.target === name && r.c === 16)
          .map((r) => r.rps),
      );
    const grpcRate = Math.round(0.7 * c16("grpc-js server, 1 conn"));
    for (const t of targets) {
      if (t.name.endsWith("c conns")) continue;
      const ownRate = !t.name.includes("gRPC") && !t.name.includes("grpc-js");
      const rate = ownRate ? Math.round(0.7 * c16(t.name)) : grpcRate;
      if (Number.isFinite(rate) && rate > 0) await measure(list, t, 16, 1, rate);
    }
    writeResults(rows, scenarios, targets);
  } finally {
    for (const c of children) await c.stop();
    await data.drop();
  }
  process.exit(0);
}

function writeResults(rows: Row[], scenarios: Scenario[], targets: Target[]): void {
  const fmt = (n: number, d = 0) =>
    Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: d }) : "–";
  const med = (s: string, t: string, c: number | string, k: "rps" | "p50" | "p99" | "cpuUs") =>
    median(rows.filter((r) => r.scenario === s && r.target === t && r.c === c).map((r) => r[k]));
  const out: string[] = [
    `# bench:grpc ${new Date().toISOString()}`,
    "",
    `${ROUNDS} rounds of ${DURATION_MS} ms per target, interleaved; medians. CPU: server process, /proc.`,
    "",
  ];
  for (const s of scenarios) {
    for (const c of CONCURRENCIES) {
      out.push(`## ${s.name}, c=${c}`, "");
      out.push(
        "| target | req/s | × REST | × grpc-js (same conns) | server CPU µs/req | p50 ms | p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
      );
      const rest = med(s.name, "REST (HTTP/1.1)", c, "rps");
      for (const t of targets) {
        if (t.name.endsWith("c conns") && c === 1) continue;
        const rps = med(s.name, t.name, c, "rps");
        const ref = t.name.endsWith("c conns")
          ? "grpc-js server, c conns"
          : "grpc-js server, 1 conn";
        out.push(
          `| ${t.name.replace(/c conns/, `${c} conns`)} | ${fmt(rps)} | ${fmt(rps / rest, 2)} | ${fmt(rps / med(s.name, ref, c, "rps"), 2)} | ${fmt(med(s.name, t.name, c, "cpuUs"))} | ${fmt(med(s.name, t.name, c, "p50"), 2)} | ${fmt(med(s.name, t.name, c, "p99"), 2)} |`,
        );
      }
      out.push("");
    }
  }
  out.push(...goalTable(scenarios, med, fmt), "");
  out.push(
    "## Open loop (list)",
    "",
    "| target | rate | achieved | p50 ms | p99 ms | p99/p50 | server CPU µs/req |",
  );
  out.push("|---|---|---:|---:|---:|---:|---:|");
  for (const r of rows.filter((x) => typeof x.c === "string")) {
    out.push(
      `| ${r.target} | ${r.c} | ${fmt(r.rps)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${fmt(r.p99 / r.p50, 1)} | ${fmt(r.cpuUs)} |`,
    );
  }
  const errors = rows.reduce((n, r) => n + r.errors, 0);
  out.push("", errors ? `**${errors} unexpected responses** (see the log).` : "No errors.");
  const text = `${out.join("\n")}\n`;
  console.log(text);
  mkdirSync("bench/results", { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  writeFileSync(`bench/results/grpc-${stamp}.md`, text);
  writeFileSync(`bench/results/grpc-${stamp}.json`, `${JSON.stringify(rows, null, 1)}\n`);
}

/**
 * Issue 14's goal, per scenario and concurrency: gRPC against the grpc-js
 * server (req/s and CPU per call, same connections), Connect over HTTP/1.1
 * against REST (req/s).
 */
function goalTable(
  scenarios: Scenario[],
  med: (s: string, t: string, c: number, k: "rps" | "cpuUs") => number,
  fmt: (n: number, d?: number) => string,
): string[] {
  const out = [
    "## Goal ratios (medians): ≥ 1.00 req/s and ≤ 1.00 CPU against grpc-js; ≥ 0.80 against REST",
    "",
    "| scenario | c | gRPC ÷ grpc-js req/s (1 conn / c conns) | gRPC ÷ grpc-js CPU (1 conn / c conns) | Connect JSON ÷ REST | Connect binary ÷ REST |",
    "|---|---:|---:|---:|---:|---:|",
  ];
  for (const s of scenarios) {
    for (const c of CONCURRENCIES) {
      const ratio = (a: string, b: string, k: "rps" | "cpuUs") =>
        fmt(med(s.name, a, c, k) / med(s.name, b, c, k), 2);
      const both = (k: "rps" | "cpuUs") =>
        c === 1
          ? ratio("gRPC, 1 conn", "grpc-js server, 1 conn", k)
          : `${ratio("gRPC, 1 conn", "grpc-js server, 1 conn", k)} / ${ratio("gRPC, c conns", "grpc-js server, c conns", k)}`;
      out.push(
        `| ${s.name} | ${c} | ${both("rps")} | ${both("cpuUs")} | ${ratio("Connect JSON (HTTP/1.1)", "REST (HTTP/1.1)", "rps")} | ${ratio("Connect binary (HTTP/1.1)", "REST (HTTP/1.1)", "rps")} |`,
      );
    }
  }
  return out;
}

await main();
