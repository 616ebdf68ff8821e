import { randomBytes } from "node:crypto";
import { createPool, type Pool } from "mysql2/promise";
import { loadConfig } from "../../src/config.js";
import { createDatabaseIfMissing, dropDatabase, openDatabase } from "../../src/db/connect.js";
import { migrateToLatest } from "../../src/db/migrate.js";
import { encodeCursor } from "../../src/domain/cursor.js";
import { databaseLimits } from "../../src/edge/call-limits.js";

/** Users the generated data is about. */
export const MAIN_USER = "bench-main";
export const RESUME_USER = "bench-resume";
/** Questions per quiz. */
export const QUESTIONS = 10;
/** Answers already given in the resume user's in-progress session. */
export const RESUME_ANSWERS = 5;

const MINUTE = 60_000;
const BATCH = 5_000;

export interface BenchData {
  url: string;
  /** History size → the quiz on which MAIN_USER has that many sessions. */
  levelQuiz: Map<number, string>;
  /** History size → cursor of the row in the middle of MAIN_USER's history there. */
  deepCursor: Map<number, string>;
  /** A quiz with QUESTIONS questions, where RESUME_USER has a session in progress. */
  startQuiz: string;
  totalSessions: number;
  generateSeconds: number;
  drop(): Promise<void>;
}

/** A quiz of QUESTIONS questions (`A<position>` is right) in study guide `guideId`; its id. */
export async function insertQuiz(pool: Pool, guideId: number, title: string): Promise<string> {
  const [q] = await pool.query("INSERT INTO quizzes (study_guide_id, title) VALUES (?, ?)", [
    guideId,
    title,
  ]);
  const quizId = String((q as { insertId: number }).insertId);
  const questions = Array.from({ length: QUESTIONS }, (_, i) => [
    quizId,
    i + 1,
    `Q${i + 1}?`,
    `A${i + 1}`,
  ]);
  await pool.query("INSERT INTO questions (quiz_id, position, prompt, correct_answer) VALUES ?", [
    questions,
  ]);
  return quizId;
}

/** A UUIDv7-shaped id: 48-bit millisecond time, then a global sequence, so ids sort by time. */
function uuidV7Like(ms: number, seq: number): string {
  const t = ms.toString(16).padStart(12, "0");
  const p = seq.toString(16).padStart(18, "0");
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${p.slice(0, 3)}-8${p.slice(3, 6)}-${p.slice(6, 18)}`;
}

type Row = [string, string, string, Date, Date | null, number, number];

/**
 * Makes and migrates a new database on `serverUrl`, then fills it with bulk
 * INSERTs: per history size N a quiz where MAIN_USER has N sessions, background
 * users' sessions on every quiz, and RESUME_USER's session in progress.
 */
export async function generate(serverUrl: string, levels: number[]): Promise<BenchData> {
  const began = performance.now();
  const url = new URL(serverUrl);
  url.pathname = `/practice_bench_${randomBytes(4).toString("hex")}`;
  const dbUrl = url.toString();
  await createDatabaseIfMissing(dbUrl);
  const handle = openDatabase({
    url: dbUrl,
    poolSize: 2,
    connectTimeoutMs: 5000,
    limits: databaseLimits(loadConfig({})),
  });
  await migrateToLatest(handle.db);
  await handle.close();

  const pool = createPool({ uri: dbUrl, connectionLimit: 4, timezone: "Z" });
  try {
    const [guide] = await pool.query("INSERT INTO study_guides (title) VALUES ('bench')");
    const guideId = (guide as { insertId: number }).insertId;
    const newQuiz = (title: string) => insertQuiz(pool, guideId, title);
    const levelQuiz = new Map<number, string>();
    for (const n of levels) levelQuiz.set(n, await newQuiz(`level ${n}`));
    const startQuiz = await newQuiz("start");
    const background: string[] = [];
    for (let i = 0; i < 20; i++) background.push(await newQuiz(`background ${i}`));
    const allQuizzes = [...levelQuiz.values(), startQuiz, ...background];

    let seq = 0;
    let total = 0;
    const now = Date.now();
    let batch: Row[] = [];
    const flush = async () => {
      if (batch.length === 0) return;
      await pool.query(
        "INSERT INTO practice_sessions (id, user_id, quiz_id, started_at, completed_at, total_questions, correct_answers) VALUES ?",
        [batch],
      );
      total += batch.length;
      batch = [];
    };
    const add = async (row: Row) => {
      batch.push(row);
      if (batch.length >= BATCH) await flush();
    };

    const deepCursor = new Map<number, string>();
    let mainRows = 0;
    for (const [n, quizId] of levelQuiz) {
      const base = now - 86_400_000 - n * MINUTE;
      const deepIndex = n - 1 - Math.floor(n / 2); // oldest-first index of the middle row
      for (let i = 0; i < n; i++) {
        const ms = base + i * MINUTE;
        const id = uuidV7Like(ms, seq++);
        if (i === deepIndex) deepCursor.set(n, encodeCursor({ startedAt: new Date(ms), id }));
        const done = i < n - 1;
        await add([
          id,
          MAIN_USER,
          quizId,
          new Date(ms),
          done ? new Date(ms + 5 * MINUTE) : null,
          10,
          7,
        ]);
      }
      mainRows += n;
    }
    const bgRows = 20_000 + Math.floor(mainRows / 10);
    for (let i = 0; i < bgRows; i++) {
      const ms = now - 2 * 86_400_000 - (bgRows - i) * 1000;
      const quizId = allQuizzes[(i * 7) % allQuizzes.length] as string;
      const user = `bench-bg-${Math.floor(i / 10)}`;
      await add([uuidV7Like(ms, seq++), user, quizId, new Date(ms), new Date(ms + MINUTE), 10, 5]);
    }
    for (let i = 0; i < 100; i++) {
      const ms = now - 3 * 86_400_000 + i * MINUTE;
      await add([
        uuidV7Like(ms, seq++),
        RESUME_USER,
        startQuiz,
        new Date(ms),
        new Date(ms + MINUTE),
        10,
        6,
      ]);
    }
    const resumeMs = now - 3_600_000;
    const resumeId = uuidV7Like(resumeMs, seq++);
    await add([resumeId, RESUME_USER, startQuiz, new Date(resumeMs), null, QUESTIONS, 3]);
    await flush();
    await pool.query(
      `INSERT INTO practice_session_questions (session_id, position, question_id)
       SELECT ?, ROW_NUMBER() OVER (ORDER BY position, id), id FROM questions WHERE quiz_id = ?`,
      [resumeId, startQuiz],
    );
    await pool.query(
      `INSERT INTO practice_session_answers (session_id, question_id, user_answer, is_correct, answered_at)
       SELECT ?, id, 'A', position % 2, ? + INTERVAL position SECOND
       FROM questions WHERE quiz_id = ? ORDER BY position LIMIT ?`,
      [resumeId, new Date(resumeMs), startQuiz, RESUME_ANSWERS],
    );
    await pool.query("ANALYZE TABLE practice_sessions, practice_session_answers");
    return {
      url: dbUrl,
      levelQuiz,
      deepCursor,
      startQuiz,
      totalSessions: total,
      generateSeconds: (performance.now() - began) / 1000,
      drop: () => dropDatabase(dbUrl),
    };
  } finally {
    await pool.end();
  }
}
