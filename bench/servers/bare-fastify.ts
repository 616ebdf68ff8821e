/**
 * Baseline: what a user would write instead of this service. A bare Fastify
 * (HTTP/1.1) + mysql2 app doing the list and start-or-resume by hand: it
 * verifies the JWT with jose on every request (or, under /cached, once per
 * token like our Authenticator), checks the quiz is live in its own query,
 * and answers the same JSON. No stale-session rule, no race retries, no
 * problem+json: only the happy path, as a benchmark needs.
 *
 *   PORT=8090 DATABASE_URL=mysql://root@127.0.0.1:3306/db JWT_SECRET=... tsx bench/servers/bare-fastify.ts
 */
import { type FastifyReply, type FastifyRequest, fastify } from "fastify";
import { jwtVerify } from "jose";
import { createPool, type RowDataPacket } from "mysql2/promise";
import { v7 as uuidv7 } from "uuid";

const secret = new TextEncoder().encode(process.env.JWT_SECRET ?? "");
const pool = createPool({
  uri: process.env.DATABASE_URL,
  connectionLimit: Number(process.env.DB_POOL_SIZE ?? 10),
  timezone: "Z",
  supportBigNumbers: true,
  bigNumberStrings: true,
});
const cache = new Map<string, { sub: string; exp: number }>();

async function user(req: FastifyRequest, cached: boolean): Promise<string | undefined> {
  const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
  if (!token) return undefined;
  if (cached) {
    const hit = cache.get(token);
    if (hit && hit.exp > Date.now() / 1000) return hit.sub;
  }
  try {
    const { payload } = await jwtVerify(token, secret, { algorithms: ["HS256"] });
    if (typeof payload.sub !== "string" || typeof payload.exp !== "number") return undefined;
    if (cached && cache.size < 10_000) cache.set(token, { sub: payload.sub, exp: payload.exp });
    return payload.sub;
  } catch {
    return undefined;
  }
}

async function quizIsLive(quizId: string): Promise<boolean> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT 1 FROM quizzes q JOIN study_guides g ON g.id = q.study_guide_id
     WHERE q.id = ? AND q.deleted_at IS NULL AND g.deleted_at IS NULL`,
    [quizId],
  );
  return rows.length > 0;
}

interface SessionRow extends RowDataPacket {
  id: string;
  quiz_id: string;
  started_at: Date;
  completed_at: Date | null;
  total_questions: number;
  correct_answers: number;
}

function summary(r: SessionRow) {
  return {
    id: r.id,
    quiz_id: r.quiz_id,
    started_at: r.started_at.toISOString(),
    completed_at: r.completed_at?.toISOString() ?? null,
    total_questions: r.total_questions,
    correct_answers: r.correct_answers,
    score_percentage: r.completed_at
      ? Math.round((r.correct_answers * 100) / r.total_questions)
      : null,
  };
}

type QuizRequest = FastifyRequest<{
  Params: { quiz_id: string };
  Querystring: { status?: string; limit?: string; cursor?: string };
}>;

function list(cached: boolean) {
  return async (req: QuizRequest, reply: FastifyReply) => {
    const sub = await user(req, cached);
    if (!sub) return reply.code(401).send({ code: "unauthenticated" });
    const { quiz_id: quizId } = req.params;
    const limit = Number(req.query.limit ?? 20);
    if (!/^[1-9][0-9]*$/.test(quizId)) return reply.code(404).send({ code: "not_found" });
    if (!(await quizIsLive(quizId))) return reply.code(404).send({ code: "not_found" });
    let where = "user_id = ? AND quiz_id = ?";
    const params: unknown[] = [sub, quizId];
    if (req.query.status === "active") where += " AND completed_at IS NULL";
    if (req.query.status === "completed") where += " AND completed_at IS NOT NULL";
    if (req.query.cursor) {
      const [, ms, id] = Buffer.from(req.query.cursor, "base64url").toString().split(".");
      const at = new Date(Number(ms));
      where += " AND started_at <= ? AND (started_at < ? OR id < ?)";
      params.push(at, at, id);
    }
    const [rows] = await pool.query<SessionRow[]>(
      `SELECT id, quiz_id, started_at, completed_at, total_questions, correct_answers
       FROM practice_sessions WHERE ${where} ORDER BY started_at DESC, id DESC LIMIT ?`,
      [...params, limit + 1],
    );
    const hasMore = rows.length > limit;
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      sessions: page.map(summary),
      next_cursor:
        hasMore && last
          ? Buffer.from(`v1.${last.started_at.getTime()}.${last.id}`).toString("base64url")
          : null,
      has_more: hasMore,
    };
  };
}

function start(cached: boolean) {
  return async (req: QuizRequest, reply: FastifyReply) => {
    const sub = await user(req, cached);
    if (!sub) return reply.code(401).send({ code: "unauthenticated" });
    const { quiz_id: quizId } = req.params;
    if (!/^[1-9][0-9]*$/.test(quizId)) return reply.code(404).send({ code: "not_found" });
    if (!(await quizIsLive(quizId))) return reply.code(404).send({ code: "not_found" });
    const [found] = await pool.query<SessionRow[]>(
      `SELECT id, quiz_id, started_at, completed_at, total_questions, correct_answers
       FROM practice_sessions WHERE user_id = ? AND quiz_id = ? AND completed_at IS NULL`,
      [sub, quizId],
    );
    const session = found[0];
    if (session) {
      const [answers] = await pool.query<RowDataPacket[]>(
        `SELECT question_id, user_answer, is_correct, answered_at FROM practice_session_answers
         WHERE session_id = ? ORDER BY answered_at, id`,
        [session.id],
      );
      return {
        ...summary(session),
        answers: answers.map((a) => ({
          question_id: a.question_id,
          user_answer: a.user_answer,
          is_correct: a.is_correct === null ? null : a.is_correct === 1,
          answered_at: (a.answered_at as Date).toISOString(),
        })),
      };
    }
    const id = uuidv7();
    const startedAt = new Date();
    const conn = await pool.getConnection();
    let total = 0;
    try {
      await conn.beginTransaction();
      await conn.query(
        `INSERT INTO practice_sessions (id, user_id, quiz_id, started_at, total_questions)
         SELECT ?, ?, ?, ?, COUNT(*) FROM questions WHERE quiz_id = ? HAVING COUNT(*) > 0`,
        [id, sub, quizId, startedAt, quizId],
      );
      const [snap] = await conn.query(
        `INSERT INTO practice_session_questions (session_id, position, question_id)
         SELECT ?, ROW_NUMBER() OVER (ORDER BY position, id), id FROM questions WHERE quiz_id = ?`,
        [id, quizId],
      );
      total = (snap as { affectedRows: number }).affectedRows;
      await conn.commit();
    } catch (err) {
      await conn.rollback();
      throw err;
    } finally {
      conn.release();
    }
    reply.code(201).header("location", `/sessions/${id}`);
    return {
      ...summary({
        id,
        quiz_id: quizId,
        started_at: startedAt,
        completed_at: null,
        total_questions: total,
        correct_answers: 0,
      } as SessionRow),
      answers: [],
    };
  };
}

const app = fastify({ logger: false });
app.get("/quizzes/:quiz_id/sessions", list(false));
app.get("/cached/quizzes/:quiz_id/sessions", list(true));
app.post("/quizzes/:quiz_id/sessions", start(false));
app.post("/cached/quizzes/:quiz_id/sessions", start(true));
await app.listen({ port: Number(process.env.PORT ?? 8090), host: "127.0.0.1" });
process.on("SIGTERM", () => {
  void app.close().then(() => pool.end().then(() => process.exit(0)));
});
