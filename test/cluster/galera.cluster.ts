import { sql } from "kysely";
import { createConnection, createPool } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import {
  Health,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import { STALE_AFTER_MS } from "../../src/domain/session.js";
import { insertQuiz, insertSessions, type QuizFixture } from "../support/fixtures.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { waitForSynced } from "./support/mariadb-servers.js";
import {
  inRounds,
  nth,
  type Replicas,
  type Reply,
  startReplicas,
  timings,
  withDatabase,
} from "./support/replicas.js";

/**
 * Three replicas of the service, each on its own node of a 3-node Galera
 * cluster, raced against each other. Every check counts its rounds and its
 * violations, prints them (the figures of docs/scaling.md), and passes only
 * with 0 violations.
 */
const ROUNDS = Number(process.env.CLUSTER_ROUNDS ?? 300);
const PARALLEL = 4;

const cluster = inject("cluster");
let svc: Replicas;
let quiz: QuizFixture;

beforeAll(async () => {
  svc = await startReplicas(cluster.galera);
  quiz = await insertQuiz(nth(svc.replicas, 0).db, { questions: 3 });
});

afterAll(async () => {
  await svc?.close();
});

function report(check: string, rounds: number, violations: Record<string, number>, ms: number[]) {
  const v = Object.entries(violations)
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
  console.log(`[galera] ${check}: ${rounds} rounds; violations: ${v}; ${timings(ms)} per round`);
}

/** Replica i of the three, for round r: each round spreads its calls over every node. */
function on(r: number, i: number) {
  return nth(svc.replicas, (r + i) % svc.replicas.length);
}

describe("on a 3-node Galera cluster, with one service replica per node", () => {
  it("keeps one session per start race, also over a stale session", async () => {
    const violations = { notOneSession: 0, differentIds: 0, notOneCreated: 0, errors: 0 };
    const ms: number[] = [];
    const staleAt = new Date(Date.now() - STALE_AFTER_MS - 60_000);
    await inRounds(ROUNDS, PARALLEL, async (r) => {
      const user = `start-${r}`;
      const stale = r % 3 === 0;
      if (stale) {
        await insertSessions(on(r, 1).db, [
          { id: staleId(r), userId: user, quizId: quiz.quizId, startedAt: staleAt },
        ]);
      }
      const t0 = performance.now();
      const replies = await Promise.all(
        [0, 1, 2].map((i) => on(r, i).rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`)),
      );
      ms.push(performance.now() - t0);
      if (replies.some((x) => x.status !== 200 && x.status !== 201)) violations.errors++;
      if (new Set(replies.map((x) => x.body?.id)).size !== 1) violations.differentIds++;
      if (replies.filter((x) => x.status === 201).length !== 1) violations.notOneCreated++;
      const { rows } = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM practice_sessions
        WHERE user_id = ${user} AND quiz_id = ${quiz.quizId}`.execute(on(r, 2).db);
      if (Number(rows[0]?.n) !== 1) violations.notOneSession++;
    });
    report(
      "start races (3 starts per round, every 3rd over a stale session)",
      ROUNDS,
      violations,
      ms,
    );
    expect(violations).toEqual({ notOneSession: 0, differentIds: 0, notOneCreated: 0, errors: 0 });
  });

  it("accepts one answer per duplicate race", async () => {
    const violations = { notOneAccepted: 0, notOneStored: 0, errors: 0 };
    const ms: number[] = [];
    await inRounds(ROUNDS, PARALLEL, async (r) => {
      const user = `dup-${r}`;
      const started = await on(r, 0).rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
      const id = started.body.id as string;
      const t0 = performance.now();
      const replies = await Promise.all(
        [0, 1, 2].map((i) =>
          on(r, i).rest(user, "POST", `/sessions/${id}/answers`, {
            question_id: quiz.questionIds[0],
            user_answer: `guess ${i}`,
          }),
        ),
      );
      ms.push(performance.now() - t0);
      if (replies.some((x) => x.status !== 201 && x.status !== 409)) violations.errors++;
      if (replies.filter((x) => x.status === 201).length !== 1) violations.notOneAccepted++;
      const { rows } = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM practice_session_answers
        WHERE session_id = ${id}`.execute(on(r, 2).db);
      if (Number(rows[0]?.n) !== 1) violations.notOneStored++;
    });
    report("duplicate answer races (3 answers to one question per round)", ROUNDS, violations, ms);
    expect(violations).toEqual({ notOneAccepted: 0, notOneStored: 0, errors: 0 });
  });

  it("takes retries of one answer and of a completion through every node as no-ops", async () => {
    const violations = { notAllOk: 0, notOneRow: 0, notOneCompletedAt: 0, notOneEventEach: 0 };
    const ms: number[] = [];
    await inRounds(ROUNDS, PARALLEL, async (r) => {
      const user = `retry-${r}`;
      const started = await on(r, 0).rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
      const id = started.body.id as string;
      const t0 = performance.now();
      const answers = await Promise.all(
        [0, 1, 2].map((i) =>
          on(r, i).rest(user, "POST", `/sessions/${id}/answers`, {
            question_id: quiz.questionIds[0],
            user_answer: "same",
          }),
        ),
      );
      const completions = await Promise.all(
        [0, 1, 2].map((i) => on(r, i).rest(user, "POST", `/sessions/${id}/complete`)),
      );
      ms.push(performance.now() - t0);
      const ok = (x: Reply) => x.status === 200 || x.status === 201;
      if (![...answers, ...completions].every(ok)) violations.notAllOk++;
      if (new Set(completions.map((x) => x.body?.completed_at)).size !== 1) {
        violations.notOneCompletedAt++;
      }
      const { rows } = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM practice_session_answers
        WHERE session_id = ${id}`.execute(on(r, 2).db);
      if (Number(rows[0]?.n) !== 1) violations.notOneRow++;
      const events = await sql<{ type: string; n: number }>`SELECT type, COUNT(*) AS n
        FROM practice_outbox WHERE session_id = ${id} GROUP BY type`.execute(on(r, 1).db);
      if (events.rows.length !== 3 || events.rows.some((e) => Number(e.n) !== 1)) {
        violations.notOneEventEach++;
      }
    });
    report("retry races (3 identical answers, then 3 completions)", ROUNDS, violations, ms);
    expect(violations).toEqual({
      notAllOk: 0,
      notOneRow: 0,
      notOneCompletedAt: 0,
      notOneEventEach: 0,
    });
  });

  it("stores no answer after completion and leaves none out of the completion response", async () => {
    const violations = {
      answerAfterCompletion: 0,
      missingFromCompletion: 0,
      acceptedButNotStored: 0,
      errors: 0,
    };
    const ms: number[] = [];
    let answersStored = 0;
    let answersRefused = 0;
    await inRounds(ROUNDS, PARALLEL, async (r) => {
      const user = `complete-${r}`;
      const started = await on(r, 0).rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
      const id = started.body.id as string;
      const t0 = performance.now();
      // Wrong answers: a right one already wrote the session row (correct_answers).
      const [answer1, answer2, completion] = await Promise.all([
        on(r, 0).rest(user, "POST", `/sessions/${id}/answers`, {
          question_id: quiz.questionIds[0],
          user_answer: "wrong",
        }),
        on(r, 2).rest(user, "POST", `/sessions/${id}/answers`, {
          question_id: quiz.questionIds[1],
          user_answer: "wrong",
        }),
        on(r, 1).rest(user, "POST", `/sessions/${id}/complete`),
      ]);
      ms.push(performance.now() - t0);
      if (completion.status !== 200) violations.errors++;
      for (const a of [answer1, answer2]) {
        if (a.status === 201) answersStored++;
        else if (a.status === 400 || a.status === 409) answersRefused++;
        else violations.errors++;
      }
      const stored = await storedAnswers(on(r, 0), id);
      const completedAt = completion.body?.completed_at as string | undefined;
      const inResponse = new Set(
        ((completion.body?.answers ?? []) as { question_id: string }[]).map((a) => a.question_id),
      );
      for (const a of stored) {
        if (completedAt !== undefined && a.answered_at > new Date(completedAt)) {
          violations.answerAfterCompletion++;
        }
        if (!inResponse.has(a.question_id)) violations.missingFromCompletion++;
      }
      for (const [a, q] of [
        [answer1, quiz.questionIds[0]],
        [answer2, quiz.questionIds[1]],
      ] as [Reply, string][]) {
        if (a.status === 201 && !stored.some((s) => s.question_id === q)) {
          violations.acceptedButNotStored++;
        }
      }
    });
    report(
      `answer vs completion races (2 wrong answers on two nodes, completion on the third; ${answersStored} answers stored, ${answersRefused} refused)`,
      ROUNDS,
      violations,
      ms,
    );
    expect(violations).toEqual({
      answerAfterCompletion: 0,
      missingFromCompletion: 0,
      acceptedButNotStored: 0,
      errors: 0,
    });
  });

  it("reads its writes through another node (GetSession and ListSessions right after a start)", async () => {
    const violations = { getMissed: 0, listMissed: 0, errors: 0 };
    const ms: number[] = [];
    // The same read with Galera's default wsrep_sync_wait=0: what the service avoids.
    const raw = createPool({
      uri: withDatabase(nth(cluster.galera, 2), svc.database),
      connectionLimit: 4,
    });
    let rawMisses = 0;
    try {
      await inRounds(ROUNDS, PARALLEL, async (r) => {
        const user = `ryw-${r}`;
        const started = await on(r, 0).rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
        if (started.status !== 201) violations.errors++;
        const t0 = performance.now();
        const [got, list, [direct]] = await Promise.all([
          on(r, 1).rest(user, "GET", `/sessions/${started.body.id}`),
          on(r, 2).rest(user, "GET", `/quizzes/${quiz.quizId}/sessions`),
          raw.query("SELECT id FROM practice_sessions WHERE id = ?", [started.body.id]),
        ]);
        ms.push(performance.now() - t0);
        if ((direct as unknown[]).length === 0) rawMisses++;
        if (got.status !== 200) violations.getMissed++;
        if (!list.body?.sessions?.some((s: { id: string }) => s.id === started.body.id)) {
          violations.listMissed++;
        }
      });
    } finally {
      await raw.end();
    }
    report(
      `read-your-writes across nodes (start on one, get and list on the others; the same read with wsrep_sync_wait=0 missed ${rawMisses}/${ROUNDS})`,
      ROUNDS,
      violations,
      ms,
    );
    expect(violations).toEqual({ getMissed: 0, listMissed: 0, errors: 0 });
  });

  it("answers 503, never 500, from a node cut off from the cluster; /readyz 503 until it rejoins", async () => {
    const cut = nth(svc.replicas, 2);
    const node = nth(cluster.galera, 2);
    const user = "cut-off";
    const started = await cut.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`);
    const id = started.body.id as string;
    const t0 = performance.now();
    await isolate(node, true);
    const statuses = new Map<number, number>();
    const calls = 50;
    let readyz = 0;
    try {
      // Its readiness fails too (wsrep_ready OFF, not Synced; a real table
      // refuses reads), so a load balancer stops sending it traffic.
      readyz = await readyzUntil(cut.baseUrl, 503);
      for (let i = 0; i < calls; i++) {
        const replies = await Promise.all([
          cut.rest(user, "POST", `/quizzes/${quiz.quizId}/sessions`),
          cut.rest(user, "GET", `/quizzes/${quiz.quizId}/sessions`),
          cut.rest(user, "GET", `/sessions/${id}`),
          cut.rest(user, "POST", `/sessions/${id}/answers`, {
            question_id: quiz.questionIds[2],
            user_answer: "x",
          }),
          cut.rest(user, "POST", `/sessions/${id}/complete`),
        ]);
        for (const x of replies) statuses.set(x.status, (statuses.get(x.status) ?? 0) + 1);
      }
    } finally {
      await isolate(node, false);
    }
    // Back in the primary component and Synced: ready again within a probe or two.
    const rejoined = await readyzUntil(cut.baseUrl, 200);
    const seconds = ((performance.now() - t0) / 1000).toFixed(1);
    console.log(
      `[galera] cut-off node: ${calls * 5} calls, statuses ${JSON.stringify(Object.fromEntries(statuses))}; /readyz ${readyz}; cut, probed and rejoined in ${seconds} s`,
    );
    expect([...statuses.keys()]).toEqual([503]);
    expect(readyz).toBe(503);
    expect(rejoined).toBe(200);
  });

  it("says NOT_SERVING and /readyz 503 at the first question after a node leaves the primary component, after a quiet spell", async () => {
    const cut = nth(svc.replicas, 1);
    const node = nth(cluster.galera, 1);
    const health = createGrpcClient(Health, new URL(cut.baseUrl).host);
    try {
      expect(await readyzUntil(cut.baseUrl, 200)).toBe(200);
      expect((await health.check({ service: "" })).status).toBe(ServingStatus.SERVING);
      // Nobody asks for a while: the first answer after the cut must not be the last one cached.
      await new Promise((resolve) => setTimeout(resolve, 3000));
      await isolate(node, true);
      let first: [number, ServingStatus] | undefined;
      try {
        // Out of the primary component now (wsrep_ready OFF): the next probe sees it.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        const [res, check] = await Promise.all([
          fetch(`${cut.baseUrl}/readyz`),
          health.check({ service: "" }),
        ]);
        first = [res.status, check.status];
      } finally {
        await isolate(node, false);
      }
      console.log(`[galera] first answers after a quiet spell and a cut: ${JSON.stringify(first)}`);
      expect(first).toEqual([503, ServingStatus.NOT_SERVING]);
      expect(await readyzUntil(cut.baseUrl, 200)).toBe(200);
    } finally {
      health.close();
    }
  });
});

/** Polls `/readyz` (probed in the background every 500 ms) until it answers `want`, for up to 10 s. */
async function readyzUntil(baseUrl: string, want: number): Promise<number> {
  const deadline = Date.now() + 10_000;
  let status = (await fetch(`${baseUrl}/readyz`)).status;
  while (status !== want && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    status = (await fetch(`${baseUrl}/readyz`)).status;
  }
  return status;
}

function staleId(r: number): string {
  // A valid UUIDv7 shape, fixed per round, older than any the service makes.
  return `01800000-0000-7000-8000-${r.toString(16).padStart(12, "0")}`;
}

async function storedAnswers(replica: { db: Replicas["replicas"][number]["db"] }, id: string) {
  const { rows } = await sql<{ question_id: string; answered_at: Date }>`
    SELECT question_id, answered_at FROM practice_session_answers WHERE session_id = ${id}`.execute(
    replica.db,
  );
  return rows.map((row) => ({
    question_id: String(row.question_id),
    answered_at: row.answered_at,
  }));
}

/**
 * Cuts a node off from the others (`gmcast.isolate`: it drops its group
 * traffic, falls out of the primary component and answers 1047), or lets it
 * rejoin and waits until it is Synced again.
 */
async function isolate(nodeUrl: string, on: boolean): Promise<void> {
  const c = await createConnection({ uri: nodeUrl });
  try {
    await c.query(`SET GLOBAL wsrep_provider_options = 'gmcast.isolate=${on ? 1 : 0}'`);
    if (!on) return;
    for (;;) {
      const [rows] = await c.query("SHOW STATUS LIKE 'wsrep_cluster_status'");
      if ((rows as { Value: string }[])[0]?.Value !== "Primary") return;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await c.end();
    if (!on) await waitForSynced(nodeUrl, 3);
  }
}
