/**
 * `npm run bench:instructions`: instructions the service executes per
 * ListSessions call (first page of 20, of a user's 1,000 sessions) and per
 * SubmitAnswer call (a retry of a stored answer: the session read, nothing
 * written) over REST, Connect JSON and gRPC, counted by valgrind's callgrind in
 * the service process (every thread: the JIT, the GC and libuv's pool too).
 *
 * Seconds of CPU per call move by ±15% between two processes of one build on
 * this machine, more than the differences worth knowing; instructions do not
 * depend on what else the machine runs. They are not seconds (a cache miss
 * costs more than an add), so this complements `npm run bench`, it does not
 * replace it.
 *
 * Each service runs under callgrind with counting off until it is warmed
 * (BENCH_WARM calls of each kind, interleaved), then rounds of BENCH_CALLS
 * calls, one at a time on a kept connection, each round counted alone
 * (callgrind_control zeroes, then dumps). Each count is split by the function
 * that executed it: V8's optimizing compilers (still warming up: a round may
 * or may not see a function reach its threshold), its garbage collector (a
 * major collection lands in one round of several), and the rest, the call's
 * own work. The report gives the work's median per call, and the collector's
 * total over every round per call. One kind alone (BENCH_ONLY) gives rounds
 * within about 1% of each other; the kinds interleaved, about 10%.
 *
 * "REST SubmitAnswer (new)" counts SubmitAnswer writing an answer (each call answers a
 * question no call answered before, of sessions made for it straight in the
 * database): only when BENCH_ONLY names it.
 *
 * BENCH_BASELINES=1 adds the hand-written baselines of `npm run bench:throughput`,
 * each counted on its own transport's list: bare Fastify + mysql2 (REST),
 * @grpc/grpc-js and node:http2 alone (gRPC).
 * BENCH_BEFORE=/path/to/checkout adds that checkout's build; BENCH_TRACING=1
 * adds tracing at ratio 1.0 (exporting to a local OTLP endpoint) and 0.01.
 * BENCH_IN_FLIGHT=N keeps N calls in flight at once (one connection; HTTP/1.1 kinds
 * queue on it), to count what concurrency adds: admission's queue, batching.
 * BENCH_ONLY=regex counts only the kinds whose names match, BENCH_VARIANTS=regex
 * only the services whose labels do. BENCH_KEEP_DUMPS=1 keeps each round's
 * callgrind file (in the temporary folder) for callgrind_annotate.
 */
import { execFile } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { signToken } from "../src/auth/tokens.js";
import { answerCalls, SUBMIT, storedAnswer } from "./lib/answer-calls.js";
import { answerSlots } from "./lib/answer-slots.js";
import { type Child, log, SECRET, startBaseline, startService } from "./lib/children.js";
import { generate, MAIN_USER, RESUME_USER } from "./lib/data.js";
import {
  BEFORE,
  HISTORY,
  type HttpList,
  LIST,
  listCalls,
  ONE_USER,
  tracingAt,
} from "./lib/list-calls.js";
import { grpcRequest, H2Client } from "./lib/load.js";
import { OtlpSink } from "./lib/otlp-sink.js";
import { writeReport } from "./lib/report.js";
import { median } from "./lib/stats.js";

const env = process.env;
const SERVER_URL = env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const WARM = Number(env.BENCH_WARM ?? 3000);
const CALLS = Number(env.BENCH_CALLS ?? 200);
const ROUNDS = Number(env.BENCH_ROUNDS ?? 5);
const run = promisify(execFile);

type Call = () => Promise<void>;

/** Calls in flight at once (BENCH_IN_FLIGHT): 1 counts a call alone, more count what load adds. */
const IN_FLIGHT = Number(env.BENCH_IN_FLIGHT ?? 1);

/**
 * Under callgrind a call takes some fifty times as long: calls waiting for a
 * slot would read as a standing queue and be shed, and the pool's new
 * connections time out. Their clocks are stretched alike (the queue itself
 * is what is counted).
 */
const SLOW_CLOCK: Record<string, string> =
  IN_FLIGHT > 1
    ? {
        ADMISSION_TARGET_MS: "60000",
        ADMISSION_INTERVAL_MS: "600000",
        DB_CONNECT_TIMEOUT_MS: "60000",
      }
    : {};

/** `n` calls, IN_FLIGHT at a time, each worker awaiting its call before the next. */
async function calls(call: Call, n: number): Promise<void> {
  let started = 0;
  const worker = async () => {
    while (started < n) {
      started++;
      await call();
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

/** An HTTP/1.1 call on one kept-alive connection, failing on any other status than expected. */
function http1(
  port: number,
  calls: HttpList | (() => HttpList),
  auth: Record<string, string>,
): Call {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return () =>
    new Promise((resolve, reject) => {
      const call = typeof calls === "function" ? calls() : calls;
      const { method, path, body } = call;
      const headers = { ...auth, ...call.headers };
      const req = request({ host: "127.0.0.1", port, method, path, headers, agent }, (res) => {
        res.resume();
        res.on("end", () =>
          res.statusCode === call.expect
            ? resolve()
            : reject(new Error(`${path}: ${res.statusCode}`)),
        );
      });
      req.on("error", reject);
      req.end(body);
    });
}

/** The service's process under callgrind, its counts driven by callgrind_control. */
class Counted {
  #dumps = 0;

  private constructor(
    readonly child: Child,
    /** Where callgrind writes: `<prefix>.<pid>.<dump>`. */
    private readonly prefix: string,
  ) {}

  static async start(name: string, url: string, variant: Variant) {
    const prefix = join(tmpdir(), `bench-callgrind-${name.replace(/\W+/g, "-")}-${process.pid}`);
    const runtime = {
      ...(variant.cwd ? { cwd: variant.cwd } : {}),
      wrap: [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        `--callgrind-out-file=${prefix}.%p`,
        "--log-file=/dev/null",
      ],
      startTimeoutMs: 300_000,
    };
    const child = variant.baseline
      ? await startBaseline(variant.baseline, url, runtime)
      : await startService(url, { ...ONE_USER, ...SLOW_CLOCK, ...variant.vars }, runtime);
    return new Counted(child, prefix);
  }

  /** callgrind_control finds the process by user and host; HOST is also the service's variable. */
  async #control(...args: string[]): Promise<void> {
    await run("callgrind_control", [...args, String(this.child.pid)], {
      env: { ...env, HOST: "127.0.0.1" },
    });
  }

  async countFromNowOn(): Promise<void> {
    await this.#control("--instr=on");
  }

  /** Instructions executed while `work` ran, by what executed them. */
  async count(work: () => Promise<void>): Promise<Split> {
    await this.#control("--zero");
    await work();
    await this.#control("--dump");
    this.#dumps++;
    const file = `${this.prefix}.${this.child.pid}.${this.#dumps}`;
    const split = await splitByFunction(file);
    if (env.BENCH_KEEP_DUMPS !== "1") rmSync(file, { force: true });
    return split;
  }

  async stop(): Promise<void> {
    await this.child.stop();
    if (env.BENCH_KEEP_DUMPS === "1") return;
    const base = `${this.prefix}.${this.child.pid}`;
    for (const f of readdirSync(tmpdir()))
      if (join(tmpdir(), f).startsWith(base)) rmSync(join(tmpdir(), f), { force: true });
  }
}

interface Split {
  total: number;
  compiler: number;
  gc: number;
}

/** V8's optimizing compilers and parsers, by their C++ names. */
const COMPILER =
  /v8::internal::(compiler::|maglev::|baseline::|Compiler::|Parser|Scanner|interpreter::BytecodeGenerator)/;
/** V8's garbage collector, by its C++ names. */
const GC =
  /v8::internal::(Scaveng|MarkCompact|ConcurrentMarking|\w*MarkingVisitor|MarkingWorklist|Sweeper|MinorMarkSweep|Evacuat|RootScavengeVisitor|IterateObjectCache|Heap::(Collect|Scavenge|MarkCompact|Perform|Evacuate|Sweep))|heap::base::|cppgc::/;

/** A callgrind file's instructions, split by the functions that executed them. */
async function splitByFunction(file: string): Promise<Split> {
  const { stdout } = await run("callgrind_annotate", ["--inclusive=no", "--threshold=100", file], {
    maxBuffer: 64 * 1024 * 1024,
  });
  const split: Split = { total: 0, compiler: 0, gc: 0 };
  for (const line of stdout.split("\n")) {
    const m = /^\s*([\d,]+)\s+\([\s\d.]+%\)\s+(.*)$/.exec(line);
    if (!m?.[1] || m[2] === undefined) continue;
    const n = Number(m[1].replaceAll(",", ""));
    if (m[2].includes("PROGRAM TOTALS")) split.total = n;
    else if (COMPILER.test(m[2])) split.compiler += n;
    else if (GC.test(m[2])) split.gc += n;
  }
  if (split.total === 0) throw new Error(`no totals in ${file}`);
  return split;
}

/**
 * SubmitAnswer over REST, each call on a question of its own (answerSlots), 201 expected;
 * the slots are made only when this kind is counted.
 */
async function newAnswerCalls(
  port: number,
  url: string,
  auth: Record<string, string>,
): Promise<Call> {
  if (!/\(new\)/.test(env.BENCH_ONLY ?? "")) return () => Promise.resolve();
  const slots = await answerSlots(url, WARM + CALLS * (ROUNDS + 1));
  let next = 0;
  const headers = { "content-type": "application/json" };
  return http1(
    port,
    () => {
      const slot = slots[next++];
      if (slot === undefined) throw new Error("no answer slot left");
      return {
        method: "POST",
        path: `/sessions/${slot.sessionId}/answers`,
        headers,
        body: JSON.stringify({ question_id: slot.questionId, user_answer: "A1" }),
        expect: 201,
      };
    },
    auth,
  );
}

interface Variant {
  label: string;
  vars: Record<string, string>;
  cwd?: string;
  /** A hand-written baseline server (bench/servers/) instead of the service: only its transport's list. */
  baseline?: "bare-fastify" | "grpc-js" | "raw-h2";
  kind?: string;
}

async function main(): Promise<void> {
  const data = await generate(SERVER_URL, [HISTORY]);
  const quizId = data.levelQuiz.get(HISTORY) ?? "";
  const token = await signToken(SECRET, MAIN_USER, { ttlSeconds: 86_400 });
  const auth = { authorization: `Bearer ${token}` };
  const resumeToken = await signToken(SECRET, RESUME_USER, { ttlSeconds: 86_400 });
  const resumeAuth = { authorization: `Bearer ${resumeToken}` };
  const { rest, connectJson, grpcMessage } = listCalls(quizId);
  const sink = new OtlpSink();
  const variants: Variant[] = [{ label: "now", vars: {} }];
  if (env.BENCH_BEFORE) variants.push({ label: "before", vars: BEFORE, cwd: env.BENCH_BEFORE });
  if (env.BENCH_BASELINES === "1") {
    variants.push(
      { label: "bare Fastify + mysql2", vars: {}, baseline: "bare-fastify", kind: "REST" },
      { label: "@grpc/grpc-js", vars: {}, baseline: "grpc-js", kind: "gRPC" },
      { label: "node:http2 alone", vars: {}, baseline: "raw-h2", kind: "gRPC" },
    );
  }
  if (env.BENCH_TRACING === "1") {
    const endpoint = await sink.start();
    for (const ratio of ["1.0", "0.01"])
      variants.push({ label: `tracing ${ratio}`, vars: tracingAt(endpoint, ratio) });
  }
  if (env.BENCH_VARIANTS) {
    const only = new RegExp(env.BENCH_VARIANTS);
    variants.splice(0, variants.length, ...variants.filter((v) => only.test(v.label)));
  }
  const results = new Map<string, Split[]>();
  try {
    for (const v of variants) {
      log(`${v.label}: starting under callgrind`);
      const svc = await Counted.start(v.label, data.url, v);
      const h2 = new H2Client(svc.child.port);
      try {
        const grpcCall = (req: ReturnType<typeof grpcRequest>) => async () => {
          const status = await h2.call(req);
          if (status !== "OK") throw new Error(`gRPC ${req.path}: ${status}`);
        };
        const answer = v.baseline
          ? undefined
          : answerCalls(await storedAnswer(svc.child.port, data.startQuiz, resumeToken));
        const kinds: [string, Call][] = [
          ["REST", http1(svc.child.port, rest, auth)],
          ["REST SubmitAnswer (new)", await newAnswerCalls(svc.child.port, data.url, auth)],
          ["Connect JSON", http1(svc.child.port, connectJson, auth)],
          ["gRPC", grpcCall(grpcRequest(LIST, grpcMessage, token))],
        ];
        if (answer !== undefined) {
          kinds.push(
            ["REST SubmitAnswer", http1(svc.child.port, answer.rest, resumeAuth)],
            ["Connect JSON SubmitAnswer", http1(svc.child.port, answer.connectJson, resumeAuth)],
            ["gRPC SubmitAnswer", grpcCall(grpcRequest(SUBMIT, answer.grpcMessage, resumeToken))],
          );
        }
        // SubmitAnswer only when asked for by name: the list's counts stay as they were.
        const only = new RegExp(env.BENCH_ONLY ?? "^(REST|Connect JSON|gRPC)$");
        kinds.splice(
          0,
          kinds.length,
          ...kinds.filter(([kind]) => only.test(kind) && (v.kind === undefined || kind === v.kind)),
        );
        log(`${v.label}: warming (${WARM} calls of each kind)`);
        // Interleaved, as a service's traffic is: code shared by the kinds
        // sees them all before it is optimized, so no round deoptimizes it.
        for (let i = 0; i < WARM; i++) for (const [, call] of kinds) await call();
        await svc.countFromNowOn();
        // One uncounted round: counting on starts from fresh translations.
        for (const [, call] of kinds) await calls(call, CALLS);
        for (let round = 0; round < ROUNDS; round++) {
          for (const [kind, call] of kinds) {
            const split = await svc.count(() => calls(call, CALLS));
            const key = `${kind}|${v.label}`;
            results.set(key, [...(results.get(key) ?? []), split]);
            const k = (n: number) => `${Math.round(n / CALLS / 1000)}k`;
            log(
              `${v.label} round ${round + 1} ${kind}: ${k(split.total)}/call (compiler ${k(split.compiler)}, GC ${k(split.gc)})`,
            );
          }
        }
      } finally {
        h2.close();
        await svc.stop();
      }
    }
  } finally {
    await sink.close();
    await data.drop();
  }
  const k = (n: number) => `${Math.round(n / 1000).toLocaleString("en")}k`;
  const work = (x: Split) => (x.total - x.compiler - x.gc) / CALLS;
  const summary = (xs: Split[]) => {
    const works = xs.map(work);
    const gc = xs.reduce((n, x) => n + x.gc, 0) / (CALLS * Math.max(1, xs.length));
    return { work: median(works), least: Math.min(...works), most: Math.max(...works), gc };
  };
  const lines = [
    `# Instructions per call: ListSessions, first page of 20 of ${HISTORY} sessions; SubmitAnswer, a retry of a stored answer`,
    "",
    `Counted by callgrind in the service's process after ${WARM} warming calls of each kind; ${ROUNDS} rounds of ${CALLS} calls, one at a time. Work: everything but V8's optimizing compilers and its garbage collector, median (least–most) per call; GC: the collector's instructions over every round, per call.`,
    "",
    `| transport | ${variants.map((v) => `${v.label}: work, GC`).join(" | ")} |`,
    `|---|${variants.map(() => "---:").join("|")}|`,
  ];
  for (const transport of ["REST", "Connect JSON", "gRPC"]) {
    const kinds = [transport, `${transport} SubmitAnswer`];
    if (transport === "REST") kinds.push("REST SubmitAnswer (new)");
    for (const kind of kinds) {
      if (!results.has(`${kind}|now`)) continue;
      const now = summary(results.get(`${kind}|now`) ?? []);
      const cells = variants.map((v) => {
        if (!results.has(`${kind}|${v.label}`)) return "–";
        const x = summary(results.get(`${kind}|${v.label}`) ?? []);
        const cell = `${k(x.work)} (${k(x.least)}–${k(x.most)}), ${k(x.gc)}`;
        if (v.label === "now") return cell;
        const ratio = (a: number, b: number) => `×${(a / b).toFixed(3)}`;
        // Tracing is compared with off (now); a build with now.
        return v.label.startsWith("tracing")
          ? `${cell}; ${ratio(x.work, now.work)} / ${ratio(x.work + x.gc, now.work + now.gc)} of off`
          : `${cell}; now is ${ratio(now.work, x.work)} / ${ratio(now.work + now.gc, x.work + x.gc)} of this`;
      });
      lines.push(`| ${kind} | ${cells.join(" | ")} |`);
    }
  }
  lines.push("", "Ratios: of the work alone / of the work and GC.");
  writeReport("instructions", lines.join("\n"), Object.fromEntries(results));
}

await main();
