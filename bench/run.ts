/**
 * `npm run bench`: throughput, latency and cost per request of ListSessions,
 * StartSession and GetQuiz over every transport, next to baselines measured in the
 * same run on the same data. See BENCHMARKS.md for what it does and the
 * environment variables; results go to bench/results/ (JSON and Markdown).
 *
 * This file is the order of the run; bench/run/ holds its parts: the settings,
 * the table of transports (targets.ts) and the requests sent over them, the
 * SQL captured for the raw ceiling, the accounting, timed and gzip phases,
 * and the report.
 */

import { createPool } from "mysql2/promise";
import { signToken } from "../src/auth/tokens.js";
import type { Child } from "./lib/children.js";
import { type BenchData, generate, MAIN_USER, RESUME_USER } from "./lib/data.js";
import { GrpcLoadClient } from "./lib/load.js";
import { rssMiB } from "./lib/proc.js";
import { accountingPhase } from "./run/accounting.js";
import { captureServiceSql } from "./run/capture.js";
import { gzipPhase } from "./run/gzip.js";
import { closeMeter, openMeter } from "./run/measure.js";
import {
  createPhase,
  historyPhase,
  type ListContext,
  listAt,
  soakAndOpenPhase,
  sweep,
} from "./run/phases.js";
import { writeResults } from "./run/report.js";
import { quizTargets, startTargets } from "./run/requests.js";
import { sanityChecks } from "./run/sanity.js";
import { startBare, startService } from "./run/services.js";
import {
  CONCURRENCIES,
  DURATION_MS,
  KEEP,
  LEVELS,
  log,
  MAIN_LEVEL,
  ONLY,
  POOL_SIZE,
  PROFILE,
  ROUNDS,
  SECRET,
  SERVER_URL,
  SERVICE_NODE_FLAGS,
} from "./run/settings.js";
import { connectClients, type Servers } from "./run/targets.js";

async function main(): Promise<void> {
  log(`levels ${LEVELS.join(", ")}; ${DURATION_MS} ms per run; ${ROUNDS} rounds`);
  const data = await generate(SERVER_URL, LEVELS);
  log(`generated ${data.totalSessions} sessions in ${data.generateSeconds.toFixed(1)} s`);
  await openMeter(SERVER_URL);
  const children: Child[] = [];
  try {
    await benchAll(data, children);
  } finally {
    for (const c of children) await c.stop();
    await closeMeter();
    if (!KEEP) await data.drop();
  }
  writeResults(data);
}

/** Every phase in order; started children join `children` so `main` stops them on failure. */
async function benchAll(data: BenchData, children: Child[]): Promise<void> {
  const mainToken = await signToken(SECRET, MAIN_USER, { ttlSeconds: 86_400 });
  const resumeToken = await signToken(SECRET, RESUME_USER, { ttlSeconds: 86_400 });
  const sql = await captureServiceSql(data);
  const rawPool = createPool({
    uri: data.url,
    connectionLimit: POOL_SIZE,
    timezone: "Z",
    supportBigNumbers: true,
    bigNumberStrings: true,
  });

  // Exact round trips first, on their own servers behind the counting proxy.
  await accountingPhase(data, mainToken, resumeToken, sql);

  const flags = [
    ...(PROFILE ? ["--cpu-prof", "--cpu-prof-dir", "bench/results/profiles"] : []),
    ...SERVICE_NODE_FLAGS,
  ];
  const svc = await startService("service", data.url, flags);
  children.push(svc);
  const bare = await startBare("bare", data.url);
  children.push(bare);
  const grpc = new GrpcLoadClient(`127.0.0.1:${svc.port}`);
  const servers: Servers = { svc, bare, grpc, ...connectClients(svc.port) };
  const s = () => servers;
  const rssStart = rssMiB(svc.pid);
  await sanityChecks(servers, data, mainToken, resumeToken);
  // Stops the service and its client: the gzip phase then runs its own servers alone.
  const stopService = async () => {
    grpc.close();
    await svc.stop();
    children.splice(children.indexOf(svc), 1);
  };

  // GetQuiz: a 10-question quiz, c=1 and c=16.
  const quiz = quizTargets(s, rawPool, mainToken, data.startQuiz, sql.quizSql);
  await sweep("quiz", "10 questions", quiz, [1, 16]);
  if (ONLY === "quiz") {
    await stopService();
    await rawPool.end();
    return;
  }

  // List: concurrency sweep at the main level, first page.
  const ctx: ListContext = { s, rawPool, data, mainToken, sql };
  const main = listAt(ctx, MAIN_LEVEL, false);
  await sweep("list", `${MAIN_LEVEL} first page`, main, CONCURRENCIES);
  const rssAfterWarm = rssMiB(svc.pid);
  await historyPhase(ctx);

  // Start: resume (same user every time) and create (a new user per request).
  const resume = startTargets(s, () => resumeToken, data.startQuiz, false, sql.rawResume(rawPool));
  await sweep("start", "resume", resume, [16]);
  await createPhase(s, data, rawPool, sql);

  await soakAndOpenPhase(main, rssStart, rssAfterWarm);
  await stopService();

  await gzipPhase(data, mainToken, children);
  await rawPool.end();
}

await main();
