/**
 * `npm run bench:events`: what the outbox costs and how fast the relay is, on
 * MySQL/MariaDB (BENCH_DATABASE_URL, default local root) and NATS
 * (BENCH_NATS_URL, default nats://127.0.0.1:4222). Short on purpose.
 *
 * 1. Cost per request: the service (src/main.ts, relay off) behind a proxy
 *    that counts the commands it sends to the database; N sessions each
 *    started, answered (10 questions) and completed. Database round trips
 *    and service CPU per start, answer and completion. With `--base DIR`
 *    (a checkout of the code before the outbox, sharing node_modules) the
 *    same for it, for a before/after.
 * 2. Relay throughput: 20,000 events in the outbox, one relay (batches of
 *    200) drains them to a stream: events per second and CPU per event.
 * 3. Lag: the service with its in-process relay under a closed-loop load for
 *    10 s: time from each event's change to its storage in the stream.
 */
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { pino } from "pino";
import { v7 as uuidv7 } from "uuid";
import { signToken } from "../src/auth/tokens.js";
import { createDatabaseIfMissing, dropDatabase, openDatabase } from "../src/db/connect.js";
import type { Db } from "../src/db/database.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { insertEvents } from "../src/db/outbox-repository.js";
import { sessionStarted } from "../src/domain/events.js";
import { OutboxRelay } from "../src/events/relay.js";
import { startChild } from "./lib/children.js";
import { CommandCountingProxy } from "./lib/count-proxy.js";
import { cpuMs } from "./lib/proc.js";
import { percentile } from "./lib/stats.js";

const SERVER_URL = process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
const NATS_URL = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";
const SECRET = "bench-secret-bench-secret-bench-secret-01";
const QUESTIONS = 10;
const SESSIONS = Number(process.env.BENCH_EVENT_SESSIONS ?? 200);
const CONCURRENCY = 8;
/** Ports of this bench: 18700-18799. */
let nextPort = 18_700 + Math.floor(Math.random() * 50);

/** A new database: migrated here, or (`migrated`) by a service already started on `url`. */
function newDatabaseUrl(): string {
  const url = new URL(SERVER_URL);
  url.pathname = `/practice_bench_events_${randomBytes(4).toString("hex")}`;
  return url.toString();
}

async function newDatabase(dbUrl = newDatabaseUrl(), migrated = false) {
  await createDatabaseIfMissing(dbUrl);
  const handle = openDatabase({ url: dbUrl, poolSize: 4, connectTimeoutMs: 5000 });
  if (!migrated) await migrateToLatest(handle.db);
  const guide = await handle.db
    .insertInto("study_guides")
    .values({ title: "Bench" })
    .executeTakeFirstOrThrow();
  const quiz = await handle.db
    .insertInto("quizzes")
    .values({ study_guide_id: String(guide.insertId), title: "Bench" })
    .executeTakeFirstOrThrow();
  const quizId = String(quiz.insertId);
  const questionIds: string[] = [];
  for (let i = 1; i <= QUESTIONS; i++) {
    const q = await handle.db
      .insertInto("questions")
      .values({ quiz_id: quizId, position: i, prompt: `Q${i}`, correct_answer: `A${i}` })
      .executeTakeFirstOrThrow();
    questionIds.push(String(q.insertId));
  }
  return {
    url: dbUrl,
    db: handle.db,
    quizId,
    questionIds,
    async drop() {
      await handle.close();
      await dropDatabase(dbUrl);
    },
  };
}

async function post(base: string, token: string, path: string, body: unknown = {}) {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string };
}

/** Runs `work(i)` for i in 0..n-1, CONCURRENCY at a time. */
async function pool(n: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < n) await work(next++);
    }),
  );
}

interface Cost {
  roundTrips: number;
  cpuUs: number;
}

/** Round trips and service CPU per start, answer and completion, for the service at `root`. */
async function costPerRequest(root: string): Promise<Record<string, Cost>> {
  // The service migrates its own database: the code before the outbox knows no 0004.
  const dbUrl = newDatabaseUrl();
  await createDatabaseIfMissing(dbUrl);
  const target = new URL(dbUrl);
  const proxy = new CommandCountingProxy(target.hostname, Number(target.port || 3306));
  await proxy.start();
  target.host = `127.0.0.1:${proxy.port}`;
  const port = nextPort++;
  const child = await startChild("service", resolve(root, "src/main.ts"), {
    DATABASE_URL: target.toString(),
    PORT: String(port),
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    JWT_SECRET: SECRET,
    LOG_LEVEL: "warn",
    NATS_URL: "",
  });
  const data = await newDatabase(dbUrl, true);
  const base = `http://127.0.0.1:${port}`;
  const tokens = await Promise.all(
    Array.from({ length: SESSIONS + 20 }, (_, i) => signToken(SECRET, `bench-ev-${i}`)),
  );
  const ids: string[] = [];
  const phase = async (n: number, work: (i: number) => Promise<void>): Promise<Cost> => {
    const c0 = proxy.commands;
    const t0 = cpuMs(child.pid);
    await pool(n, work);
    return {
      roundTrips: (proxy.commands - c0) / n,
      cpuUs: ((cpuMs(child.pid) - t0) * 1000) / n,
    };
  };
  try {
    // Warm-up: 20 whole sessions on other users.
    await pool(20, async (i) => {
      const token = tokens[SESSIONS + i] as string;
      const { id } = await post(base, token, `/quizzes/${data.quizId}/sessions`);
      for (const q of data.questionIds) {
        await post(base, token, `/sessions/${id}/answers`, { question_id: q, user_answer: "A1" });
      }
      await post(base, token, `/sessions/${id}/complete`);
    });
    const start = await phase(SESSIONS, async (i) => {
      ids[i] = (await post(base, tokens[i] as string, `/quizzes/${data.quizId}/sessions`)).id;
    });
    const answer = await phase(SESSIONS * QUESTIONS, async (k) => {
      const i = k % SESSIONS;
      const q = Math.floor(k / SESSIONS);
      await post(base, tokens[i] as string, `/sessions/${ids[i]}/answers`, {
        question_id: data.questionIds[q],
        user_answer: q % 2 === 0 ? `A${q + 1}` : "no",
      });
    });
    const complete = await phase(SESSIONS, async (i) => {
      await post(base, tokens[i] as string, `/sessions/${ids[i]}/complete`);
    });
    return { start, answer, complete };
  } finally {
    await child.stop();
    await proxy.stop();
    await data.drop();
  }
}

async function deleteStream(stream: string): Promise<void> {
  const nc = await connect({ servers: NATS_URL });
  await (await jetstreamManager(nc)).streams.delete(stream).catch(() => {});
  await nc.close();
}

async function outboxEmpty(db: Db): Promise<boolean> {
  return (await db.selectFrom("practice_outbox").select("seq").limit(1).execute()).length === 0;
}

/** 20,000 events drained by one relay. */
async function relayThroughput() {
  const data = await newDatabase();
  const tag = randomBytes(4).toString("hex");
  const target = { url: NATS_URL, stream: `BENCH_${tag}`, subjectPrefix: `bench_${tag}` };
  const events = Array.from({ length: 2000 }, () => uuidv7()).flatMap((id) =>
    Array.from({ length: 10 }, (_, n) =>
      sessionStarted(
        { newId: uuidv7, userId: "bench" },
        { id, quizId: data.quizId, startedAt: new Date(), totalQuestions: n },
      ),
    ),
  );
  for (let i = 0; i < events.length; i += 1000) {
    await data.db.transaction().execute((trx) => insertEvents(trx, events.slice(i, i + 1000)));
  }
  const relay = new OutboxRelay({
    db: data.db,
    target,
    logger: pino({ level: "warn" }),
    pollMs: 10,
  });
  const t0 = performance.now();
  const c0 = cpuMs(process.pid);
  relay.start();
  while (!(await outboxEmpty(data.db))) await new Promise((r) => setTimeout(r, 50));
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuMs(process.pid) - c0;
  await relay.stop();
  await deleteStream(target.stream);
  await data.drop();
  return {
    events: events.length,
    seconds: Number(seconds.toFixed(2)),
    eventsPerSecond: Math.round(events.length / seconds),
    relayCpuUsPerEvent: Math.round((cpu * 1000) / events.length),
  };
}

/** The service with its relay under 10 s of closed-loop load: event time → stream time. */
async function lagUnderLoad() {
  const data = await newDatabase();
  const tag = randomBytes(4).toString("hex");
  const stream = `BENCH_${tag}`;
  const port = nextPort++;
  const child = await startChild("service", resolve("src/main.ts"), {
    DATABASE_URL: data.url,
    PORT: String(port),
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    JWT_SECRET: SECRET,
    LOG_LEVEL: "warn",
    NATS_URL,
    NATS_STREAM: stream,
    NATS_SUBJECT_PREFIX: `bench_${tag}`,
  });
  const base = `http://127.0.0.1:${port}`;
  let requests = 0;
  const until = Date.now() + 10_000;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, w) => {
      const token = await signToken(SECRET, `lag-${w}`);
      while (Date.now() < until) {
        const { id } = await post(base, token, `/quizzes/${data.quizId}/sessions`);
        for (const q of data.questionIds) {
          await post(base, token, `/sessions/${id}/answers`, { question_id: q, user_answer: "x" });
        }
        await post(base, token, `/sessions/${id}/complete`);
        requests += QUESTIONS + 2;
      }
    }),
  );
  while (!(await outboxEmpty(data.db))) await new Promise((r) => setTimeout(r, 50));
  await child.stop();
  const nc = await connect({ servers: NATS_URL });
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(stream);
  const lags: number[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (m === null) continue;
    const event = m.json<{ time: string }>();
    lags.push(m.time.getTime() - new Date(event.time).getTime());
  }
  await jsm.streams.delete(stream);
  await nc.close();
  await data.drop();
  lags.sort((a, b) => a - b);
  return {
    requests,
    requestsPerSecond: Math.round(requests / 10),
    events: lags.length,
    lagMs: {
      p50: percentile(lags, 50),
      p95: percentile(lags, 95),
      p99: percentile(lags, 99),
      max: lags.at(-1),
    },
  };
}

const baseIndex = process.argv.indexOf("--base");
const baseRoot = baseIndex > 0 ? process.argv[baseIndex + 1] : undefined;
const results: Record<string, unknown> = { sessions: SESSIONS, questions: QUESTIONS };
results.withOutbox = await costPerRequest(process.cwd());
if (baseRoot) results.before = await costPerRequest(baseRoot);
results.relay = await relayThroughput();
results.lag = await lagUnderLoad();
console.log(JSON.stringify(results, null, 2));
