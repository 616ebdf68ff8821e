/**
 * `npm run bench:overload`: what callers see when more arrive than the
 * service can serve.
 *
 * Bursts of REST StartSession and gRPC ListSessions, then open loops of
 * ListSessions at 1x, 2x and 5x the saturating rate; the method is in
 * BENCHMARKS.md.
 *
 * BENCH_QUICK=1: 1 s steps and small bursts (checks it runs end to end).
 * BENCH_STEP_MS (default 10000); BENCH_ADMISSION=default,adaptive,none picks
 * the service's admission settings to compare (default: as shipped);
 * BENCH_BUSY_CORE=1 keeps one core busy with another process throughout.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { ListSessionsRequestSchema } from "../gen/practice/v1/practice_session_service_pb.js";
import { signToken } from "../src/auth/tokens.js";
import { type Child, log, POOL_SIZE, SECRET, startService } from "./lib/children.js";
import { generate, MAIN_USER } from "./lib/data.js";
import { burst, type Call, closedLoop, grpcRequest, H2Client, openLoop } from "./lib/load.js";
import { busyCore, cpuMs } from "./lib/proc.js";
import { writeReport } from "./lib/report.js";
import { Latencies, type LoadResult } from "./lib/stats.js";

const env = process.env;
const QUICK = env.BENCH_QUICK === "1";
const SERVER_URL = env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const STEP_MS = Number(env.BENCH_STEP_MS ?? (QUICK ? 1000 : 10_000));
const BURSTS = QUICK ? [40] : [40, 200, 500];
const LIST = "/practice.v1.PracticeSessionService/ListSessions";
/** Connections of the open loops: each carries at most 100 streams at once, so 2,000 can be in flight. */
const CONNECTIONS = 20;
type Req = ReturnType<typeof grpcRequest>;
/** Users the sustained load and the gRPC bursts come from. */
const LOAD_USERS = 200;

const ADMISSION: Record<string, { env: Record<string, string>; label: string }> = {
  default: { env: {}, label: `as shipped (MAX_IN_FLIGHT = the pool's ${POOL_SIZE})` },
  adaptive: { env: { ADAPTIVE_ADMISSION: "true" }, label: "ADAPTIVE_ADMISSION=true" },
  none: { env: { MAX_IN_FLIGHT: "100000" }, label: "no admission control (MAX_IN_FLIGHT=100000)" },
};

/** Statuses that say "not now, try again": the service shed the call. */
const REFUSED = new Set([
  "503",
  "429",
  "401",
  "UNAVAILABLE",
  "RESOURCE_EXHAUSTED",
  "UNAUTHENTICATED",
]);

interface Row {
  step: string;
  offered: number;
  admitted: number;
  refused: number;
  other: number;
  goodput: number;
  p50: number;
  p99: number;
  healthzP50: number;
  healthzP99: number;
  cpuPercent: number;
}

/** Polls GET /healthz every 100 ms on an HTTP/1.1 connection of its own until stopped. */
function healthzPoller(port: number) {
  const lat = new Latencies();
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        await (await fetch(`http://127.0.0.1:${port}/healthz`)).arrayBuffer();
        lat.add(performance.now() - t0);
      } catch {
        lat.add(Number.POSITIVE_INFINITY);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return async () => {
    running = false;
    await loop;
    return lat.summary();
  };
}

/** Runs `work` with the service's CPU and /healthz measured around it. */
async function measured<T>(svc: Child, work: () => Promise<T>) {
  const cpu0 = cpuMs(svc.pid);
  const t0 = performance.now();
  const stop = healthzPoller(svc.port);
  const result = await work();
  const healthz = await stop();
  return {
    result,
    healthz,
    cpuPercent: ((cpuMs(svc.pid) - cpu0) / (performance.now() - t0)) * 100,
  };
}

function count(statuses: Record<string, number>, expect: string) {
  let refused = 0;
  let other = 0;
  for (const [status, n] of Object.entries(statuses)) {
    if (REFUSED.has(status)) refused += n;
    else if (status !== expect) other += n;
  }
  return { admitted: statuses[expect] ?? 0, refused, other };
}

async function runSetting(name: string, dbUrl: string, quizId: string, startQuiz: string) {
  const setting = ADMISSION[name];
  if (!setting)
    throw new Error(
      `BENCH_ADMISSION: "${name}" is not one of ${Object.keys(ADMISSION).join(", ")}`,
    );
  const svc = await startService(dbUrl, setting.env);
  const rows: Row[] = [];
  // Overload as it comes: MAIN_USER and 199 others in turn, none over its share of the queue.
  const users = [MAIN_USER, ...Array.from({ length: LOAD_USERS - 1 }, (_, i) => `load-${i}`)];
  const message = toBinary(
    ListSessionsRequestSchema,
    create(ListSessionsRequestSchema, { quizId }),
  );
  const lists = await Promise.all(
    users.map(async (user) =>
      grpcRequest(LIST, message, await signToken(SECRET, user, { ttlSeconds: 86_400 })),
    ),
  );
  const clients = Array.from({ length: CONNECTIONS }, () => new H2Client(svc.port));
  let next = 0;
  const listCall: Call = () => {
    const n = next++;
    return (clients[n % CONNECTIONS] as H2Client).call(lists[n % LOAD_USERS] as (typeof lists)[0]);
  };
  try {
    await closedLoop(listCall, 8, 1000, "OK"); // warm-up
    for (const size of BURSTS) {
      // A new user per call: each start creates a session (a write), none resumes.
      const tokens = await Promise.all(
        Array.from({ length: size }, (_, i) =>
          signToken(SECRET, `burst-${name}-${size}-${i}`, { ttlSeconds: 3600 }),
        ),
      );
      const one = new H2Client(svc.port);
      const kinds: [string, string, Call[]][] = [
        [
          "REST StartSession",
          "201",
          tokens.map(
            (t) => () =>
              one.call({
                method: "POST",
                path: `/quizzes/${startQuiz}/sessions`,
                headers: { authorization: `Bearer ${t}` },
              }),
          ),
        ],
        [
          "gRPC ListSessions",
          "OK",
          Array.from({ length: size }, (_, i) => () => one.call(lists[i % LOAD_USERS] as Req)),
        ],
      ];
      for (const [kind, expect, calls] of kinds) {
        const { result, healthz, cpuPercent } = await measured(svc, () => burst(calls));
        const counts = count(result.statuses, expect);
        const ok = result.byStatus.get(expect)?.summary();
        rows.push({
          step: `burst of ${size}: ${kind}`,
          offered: size,
          ...counts,
          goodput: (counts.admitted / result.ms) * 1000,
          p50: ok?.p50 ?? Number.NaN,
          p99: ok?.p99 ?? Number.NaN,
          healthzP50: healthz.p50,
          healthzP99: healthz.p99,
          cpuPercent,
        });
        log(`${rows.at(-1)?.step}: ${JSON.stringify(result.statuses)}`);
      }
      one.close();
    }
    // Sustained: the saturating rate (callers waiting keep every slot busy), then 2x and 5x it.
    const callers = Math.ceil(POOL_SIZE * 1.5);
    const saturated = await measured(svc, () => closedLoop(listCall, callers, STEP_MS, "OK"));
    const rate = saturated.result.statuses.OK ?? 0;
    const saturating = (rate / saturated.result.durationMs) * 1000;
    rows.push(
      sustainedRow(`saturating (closed loop, ${callers} callers)`, saturated, saturated.result.rps),
    );
    for (const factor of [2, 5]) {
      const offered = saturating * factor;
      const step = await measured(svc, () => openLoop(listCall, offered, STEP_MS, "OK"));
      rows.push(sustainedRow(`${factor}x saturating for ${STEP_MS / 1000} s`, step, offered));
      log(`${factor}x: ${JSON.stringify(step.result.statuses)}`);
    }
    // What refusing costs: 300 loops that ignore Retry-After, with a token that does not
    // verify (401 at the door), then one user's (over its share: 429 at the door).
    const refusals: Record<string, Call> = {
      "300 loops, a token that does not verify": () =>
        (clients[next++ % CONNECTIONS] as H2Client).call(grpcRequest(LIST, message, "bad")),
      "300 loops of one user": () =>
        (clients[next++ % CONNECTIONS] as H2Client).call(lists[0] as Req),
    };
    for (const [step, call] of Object.entries(refusals)) {
      const m = await measured(svc, () => closedLoop(call, 300, STEP_MS, "OK"));
      const refused = Object.entries(m.result.statuses)
        .filter(([status]) => status !== "OK")
        .reduce((n, [, c]) => n + c, 0);
      const cpuMs = (m.cpuPercent / 100) * m.result.durationMs;
      rows.push(sustainedRow(step, m, m.result.rps));
      log(
        `${step}: ${JSON.stringify(m.result.statuses)}; service CPU ${Math.round(m.cpuPercent)}%, ` +
          `${Math.round((cpuMs * 1000) / Math.max(1, refused + (m.result.statuses.OK ?? 0)))} µs per answer`,
      );
    }
  } finally {
    for (const c of clients) c.close();
    await svc.stop();
  }
  return { label: setting.label, rows };
}

function sustainedRow(
  step: string,
  m: {
    result: LoadResult & { admitted?: { p50: number; p99: number } };
    healthz: { p50: number; p99: number };
    cpuPercent: number;
  },
  offered: number,
): Row {
  const r = m.result;
  const counts = count(r.statuses, "OK");
  const admitted = r.admitted ?? { p50: r.p50, p99: r.p99 };
  return {
    step,
    offered: Math.round(offered),
    ...counts,
    goodput: (counts.admitted / r.durationMs) * 1000,
    p50: admitted.p50,
    p99: admitted.p99,
    healthzP50: m.healthz.p50,
    healthzP99: m.healthz.p99,
    cpuPercent: m.cpuPercent,
  };
}

async function main() {
  const stopBusy = busyCore();
  const data = await generate(SERVER_URL, [20]);
  try {
    const runs = [];
    for (const name of (env.BENCH_ADMISSION ?? "default").split(",")) {
      runs.push(await runSetting(name, data.url, data.levelQuiz.get(20) ?? "", data.startQuiz));
    }
    const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : "-");
    const lines = [
      "# Overload",
      "",
      `Bursts on one HTTP/2 connection (latency from the burst's start); sustained steps of ${STEP_MS / 1000} s.`,
      "Offered: calls (bursts) or calls a second (sustained); goodput: admitted calls a second.",
      env.BENCH_BUSY_CORE === "1" ? "Another process kept one core busy throughout." : "",
    ];
    for (const run of runs) {
      lines.push(
        "",
        `## ${run.label}`,
        "",
        "| step | offered | admitted | refused | other | goodput/s | admitted p50 ms | admitted p99 ms | /healthz p50 / p99 ms | service CPU % |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ...run.rows.map(
          (r) =>
            `| ${r.step} | ${r.offered} | ${r.admitted} | ${r.refused} | ${r.other} | ${Math.round(r.goodput)} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.healthzP50)} / ${f(r.healthzP99)} | ${Math.round(r.cpuPercent)} |`,
        ),
      );
    }
    writeReport("overload", lines.join("\n"), runs);
  } finally {
    await data.drop();
    stopBusy();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
