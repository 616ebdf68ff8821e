/**
 * The REST baseline: a bare Fastify (HTTP/1.1) + mysql2 app answering
 * ListSessions' route by hand with the same JSON, token cache and quiz check;
 * only the happy path.
 *
 *   PORT=8090 DATABASE_URL=mysql://root@127.0.0.1:3306/db JWT_SECRET=... node dist/bench/servers/bare-fastify.js (after npm run bench:build)
 */
import { type FastifyReply, type FastifyRequest, fastify } from "fastify";
import { jwtVerify } from "jose";
import { createPool, type RowDataPacket } from "mysql2/promise";

const secret = new TextEncoder().encode(process.env.JWT_SECRET ?? "");
const pool = createPool({
  uri: process.env.DATABASE_URL,
  connectionLimit: Number(process.env.DB_POOL_SIZE ?? 10),
  timezone: "Z",
  supportBigNumbers: true,
  bigNumberStrings: true,
});
const cache = new Map<string, { sub: string; exp: number }>();

async function user(req: FastifyRequest): Promise<string | undefined> {
  const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
  if (!token) return undefined;
  const hit = cache.get(token);
  if (hit && hit.exp > Date.now() / 1000) return hit.sub;
  try {
    const { payload } = await jwtVerify(token, secret, { algorithms: ["HS256"] });
    if (typeof payload.sub !== "string" || typeof payload.exp !== "number") return undefined;
    if (cache.size < 10_000) cache.set(token, { sub: payload.sub, exp: payload.exp });
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

function list() {
  return async (req: QuizRequest, reply: FastifyReply) => {
    const sub = await user(req);
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

const app = fastify({ logger: false });
app.get("/quizzes/:quiz_id/sessions", list());
await app.listen({ port: Number(process.env.PORT ?? 8090), host: "127.0.0.1" });
process.on("SIGTERM", () => {
  void app.close().then(() => pool.end().then(() => process.exit(0)));
});
