import { ConnectError } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { sql } from "kysely";
import type { Db } from "../../src/db/database.js";
import type { TestService } from "./service.js";

/** The transports a start or a list can go through. */
export const TRANSPORTS = ["rest", "connect", "grpc-web", "grpc"] as const;
export type Transport = (typeof TRANSPORTS)[number];

/** What a caller saw: a session id (and whether it was created), or an error code. */
export interface Outcome {
  transport: Transport;
  /** Connect code name ("ok" on success), from the REST problem's `code` too. */
  code: string;
  /** HTTP status over REST; undefined elsewhere. */
  status?: number;
  created?: boolean;
  id?: string;
  ms: number;
}

/** Starts (or resumes) `user`'s session on `quizId` through `transport`, never throwing. */
export async function startVia(
  svc: TestService,
  transport: Transport,
  user: string,
  quizId: string,
): Promise<Outcome> {
  const t0 = performance.now();
  const done = (o: Omit<Outcome, "transport" | "ms">): Outcome => ({
    transport,
    ms: performance.now() - t0,
    ...o,
  });
  try {
    if (transport === "rest") {
      const res = await svc.rest(user, "POST", `/quizzes/${quizId}/sessions`);
      const body = (await res.json()) as { id?: string; code?: string };
      if (res.status === 200 || res.status === 201) {
        return done({ code: "ok", status: res.status, created: res.status === 201, id: body.id });
      }
      return done({ code: body.code ?? "unknown", status: res.status });
    }
    const headers = await svc.auth(user);
    if (transport === "grpc") {
      const r = await svc.grpc.startSession({ quizId }, headers);
      return done({ code: "ok", created: r.created, id: r.session?.id });
    }
    const client = transport === "connect" ? svc.connect : svc.grpcWeb;
    const r = await client.startSession({ quizId }, { headers });
    return done({ code: "ok", created: r.created, id: r.session?.id });
  } catch (err) {
    if (transport === "grpc") {
      const code = (err as { code?: number }).code;
      return done({ code: typeof code === "number" ? codeToString(code) : String(err) });
    }
    return done({ code: codeToString(ConnectError.from(err).code) });
  }
}

/** Answers a question of `user`'s session through `transport`, never throwing. */
export async function answerVia(
  svc: TestService,
  transport: Transport,
  user: string,
  answer: { sessionId: string; questionId: string; userAnswer: string },
): Promise<Outcome & { userAnswer?: string }> {
  return callVia(transport, async () => {
    if (transport === "rest") {
      const res = await svc.rest(user, "POST", `/sessions/${answer.sessionId}/answers`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ question_id: answer.questionId, user_answer: answer.userAnswer }),
      });
      const body = (await res.json()) as { answer?: { user_answer: string }; code?: string };
      const ok = res.status === 200 || res.status === 201;
      return ok
        ? { code: "ok", status: res.status, created: res.status === 201 }
        : { code: body.code ?? "unknown", status: res.status };
    }
    const headers = await svc.auth(user);
    const r =
      transport === "grpc"
        ? await svc.grpc.submitAnswer(answer, headers)
        : await (transport === "connect" ? svc.connect : svc.grpcWeb).submitAnswer(answer, {
            headers,
          });
    return { code: "ok", userAnswer: r.answer?.userAnswer };
  });
}

/** Completes `user`'s session through `transport`, never throwing; `id` is its completed_at. */
export async function completeVia(
  svc: TestService,
  transport: Transport,
  user: string,
  sessionId: string,
): Promise<Outcome> {
  return callVia(transport, async () => {
    if (transport === "rest") {
      const res = await svc.rest(user, "POST", `/sessions/${sessionId}/complete`);
      const body = (await res.json()) as { completed_at?: string; code?: string };
      return res.status === 200
        ? { code: "ok", status: 200, id: body.completed_at }
        : { code: body.code ?? "unknown", status: res.status };
    }
    const headers = await svc.auth(user);
    const r =
      transport === "grpc"
        ? await svc.grpc.completeSession({ sessionId }, headers)
        : await (transport === "connect" ? svc.connect : svc.grpcWeb).completeSession(
            { sessionId },
            { headers },
          );
    const at = r.session?.completedAt;
    return {
      code: "ok",
      id: at && new Date(Number(at.seconds) * 1000 + at.nanos / 1e6).toISOString(),
    };
  });
}

/** Runs `call` through `transport`, timing it; a thrown error becomes its code. */
async function callVia<T extends Omit<Outcome, "transport" | "ms">>(
  transport: Transport,
  call: () => Promise<T>,
): Promise<T & Outcome> {
  const t0 = performance.now();
  const done = (o: Omit<Outcome, "transport" | "ms">) =>
    ({ ...o, transport, ms: performance.now() - t0 }) as T & Outcome;
  try {
    return done(await call());
  } catch (err) {
    if (transport === "grpc") {
      const code = (err as { code?: number }).code;
      return done({ code: typeof code === "number" ? codeToString(code) : String(err) });
    }
    return done({ code: codeToString(ConnectError.from(err).code) });
  }
}

/** Lists `user`'s sessions on `quizId` through `transport`, never throwing. */
export async function listVia(
  svc: Pick<TestService, "rest" | "auth" | "grpc" | "connect" | "grpcWeb">,
  transport: Transport,
  user: string,
  quizId: string,
): Promise<Outcome & { ids?: string[] }> {
  const t0 = performance.now();
  const done = (o: Omit<Outcome, "transport" | "ms"> & { ids?: string[] }) => ({
    transport,
    ms: performance.now() - t0,
    ...o,
  });
  try {
    if (transport === "rest") {
      const res = await svc.rest(user, "GET", `/quizzes/${quizId}/sessions?limit=100`);
      const body = (await res.json()) as { sessions?: { id: string }[]; code?: string };
      if (res.status === 200) {
        return done({ code: "ok", status: 200, ids: body.sessions?.map((s) => s.id) ?? [] });
      }
      return done({ code: body.code ?? "unknown", status: res.status });
    }
    const headers = await svc.auth(user);
    if (transport === "grpc") {
      const r = await svc.grpc.listSessions({ quizId, limit: 100 }, headers);
      return done({ code: "ok", ids: r.sessions.map((s) => s.id) });
    }
    const client = transport === "connect" ? svc.connect : svc.grpcWeb;
    const r = await client.listSessions({ quizId, limit: 100 }, { headers });
    return done({ code: "ok", ids: r.sessions.map((s) => s.id) });
  } catch (err) {
    if (transport === "grpc") {
      const code = (err as { code?: number }).code;
      return done({ code: typeof code === "number" ? codeToString(code) : String(err) });
    }
    return done({ code: codeToString(ConnectError.from(err).code) });
  }
}

/**
 * Everything that must hold in the practice tables whatever happened: every
 * session has exactly `total_questions` snapshot rows numbered 1..n, no
 * snapshot or answer row without its session, at most one in-progress
 * session per (user, quiz). Each list is empty when all is well.
 */
export async function integrityViolations(db: Db) {
  const snapshotMismatch = await sql<{ id: string; total: number; rows: number }>`
    SELECT s.id, s.total_questions AS total, COUNT(q.session_id) AS \`rows\`,
           COALESCE(MIN(q.position), 1) AS lo, COALESCE(MAX(q.position), 0) AS hi
    FROM practice_sessions s LEFT JOIN practice_session_questions q ON q.session_id = s.id
    GROUP BY s.id, s.total_questions
    HAVING \`rows\` <> total OR lo <> 1 OR hi <> total OR total = 0`.execute(db);
  const orphanSnapshots = await sql<{ session_id: string }>`
    SELECT q.session_id FROM practice_session_questions q
    LEFT JOIN practice_sessions s ON s.id = q.session_id WHERE s.id IS NULL`.execute(db);
  const orphanAnswers = await sql<{ session_id: string }>`
    SELECT a.session_id FROM practice_session_answers a
    LEFT JOIN practice_sessions s ON s.id = a.session_id WHERE s.id IS NULL`.execute(db);
  const doubleActive = await sql<{ user_id: string; quiz_id: string; n: number }>`
    SELECT user_id, quiz_id, COUNT(*) AS n FROM practice_sessions
    WHERE completed_at IS NULL GROUP BY user_id, quiz_id HAVING n > 1`.execute(db);
  return {
    snapshotMismatch: snapshotMismatch.rows,
    orphanSnapshots: orphanSnapshots.rows,
    orphanAnswers: orphanAnswers.rows,
    doubleActive: doubleActive.rows,
  };
}

export const NO_VIOLATIONS = {
  snapshotMismatch: [],
  orphanSnapshots: [],
  orphanAnswers: [],
  doubleActive: [],
};

/** p-th percentile (0..100) of `values`, rounded to 0.1. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return Math.round((sorted[Math.max(0, i)] ?? 0) * 10) / 10;
}

/**
 * Prints a test's measured figures on one line, for docs/reliability.md:
 * with TEST_FIGURES=1 (`npm run test:chaos` sets it), not in a plain `npm test`.
 */
export function reportFigures(test: string, figures: Record<string, unknown>): void {
  if (process.env.TEST_FIGURES) console.info(`[figures] ${test}: ${JSON.stringify(figures)}`);
}

/** Counts `values` by key. */
export function tally<T>(values: T[], key: (v: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[key(v)] = (out[key(v)] ?? 0) + 1;
  return out;
}
