import { signToken } from "../../src/auth/tokens.js";
import type { QuizFixture } from "./fixtures.js";
import { TEST_SECRET } from "./service.js";

/** What a practice load did: responses by status ("error" when no response came). */
export interface PracticeLoad {
  statuses: Record<string, number>;
  /** Requests answered 2xx. */
  ok: number;
  stop(): Promise<void>;
}

/**
 * `workers` users in parallel, each in a loop until `stop()`: start a session
 * (a new one each time), answer every question, complete it; over REST at
 * `baseUrl`. Each call is counted by status.
 */
export function startPracticeLoad(
  baseUrl: () => string,
  quiz: QuizFixture,
  workers: number,
  prefix: string,
): PracticeLoad {
  const statuses: Record<string, number> = {};
  let stopped = false;
  const load: PracticeLoad = {
    statuses,
    ok: 0,
    async stop() {
      stopped = true;
      await running;
    },
  };
  const call = async (token: string, path: string, body?: unknown) => {
    let key = "error";
    let json: { id?: string } = {};
    try {
      const res = await fetch(`${baseUrl()}${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body ?? {}),
      });
      key = String(res.status);
      json = (await res.json()) as { id?: string };
      if (res.ok) load.ok++;
    } catch {
      // No response (connection refused or reset): counted as "error".
    }
    statuses[key] = (statuses[key] ?? 0) + 1;
    return json;
  };
  const worker = async (n: number) => {
    const token = await signToken(TEST_SECRET, `${prefix}-${n}`);
    while (!stopped) {
      const session = await call(token, `/quizzes/${quiz.quizId}/sessions`);
      if (session.id === undefined) continue;
      for (const [i, questionId] of quiz.questionIds.entries()) {
        if (stopped) break;
        const answer = i % 2 === 0 ? `A${i + 1}` : "wrong";
        await call(token, `/sessions/${session.id}/answers`, {
          question_id: questionId,
          user_answer: answer,
        });
      }
      if (!stopped) await call(token, `/sessions/${session.id}/complete`);
    }
  };
  const running = Promise.all(Array.from({ length: workers }, (_, n) => worker(n))).then(() => {});
  return load;
}
