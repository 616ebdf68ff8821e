import { afterAll, beforeAll } from "vitest";
import { insertQuiz, insertSessions, type QuizFixture } from "../fixtures.js";
import { reportFigures, tally } from "../reliability.js";
import { startTestService, type TestService } from "../service.js";

export const FUZZER = "fuzzer";
export const VICTIM = "victim";

/**
 * What the fuzzer runs against: a service, quizzes in every state the
 * contract names, and a victim whose sessions must never show up in a
 * fuzzer's answer. Filled in by `fuzzWorld()`'s beforeAll; the arbitraries
 * read it when they generate, after that.
 */
export class FuzzWorld {
  svc!: TestService;
  live!: QuizFixture;
  noQuestions!: QuizFixture;
  deleted!: QuizFixture;
  guideDeleted!: QuizFixture;
  /** The victim's sessions (ids) and the cursors of their pages. */
  readonly victimIds = new Set<string>();
  readonly victimCursors: string[] = [];
  fuzzerToken = "";
  /** Every answer seen, for the figures printed at the end. */
  readonly seen: { transport: string; outcome: string }[] = [];
}

/** Registers the hooks that set up (and tear down) a FuzzWorld for the current file. */
export function fuzzWorld(scale: number): FuzzWorld {
  const world = new FuzzWorld();
  beforeAll(async () => {
    const svc = await startTestService();
    world.svc = svc;
    world.live = await insertQuiz(svc.db, { questions: 3 });
    world.noQuestions = await insertQuiz(svc.db, { questions: 0 });
    world.deleted = await insertQuiz(svc.db, { quizDeleted: true });
    world.guideDeleted = await insertQuiz(svc.db, { studyGuideDeleted: true });
    const now = svc.clock.now().getTime();
    const history = Array.from({ length: 30 }, (_, i) => ({
      id: `01900000-0000-7000-8000-${String(i).padStart(12, "0")}`,
      userId: VICTIM,
      quizId: world.live.quizId,
      startedAt: new Date(now - (i + 1) * 60_000),
      completedAt: i === 0 ? null : new Date(now - i * 60_000),
    }));
    await insertSessions(svc.db, history);
    for (const h of history) world.victimIds.add(h.id);
    let cursor: string | null = "";
    while (cursor !== null) {
      const res = await svc.rest(
        VICTIM,
        "GET",
        `/quizzes/${world.live.quizId}/sessions?limit=7&cursor=${cursor}`,
      );
      cursor = ((await res.json()) as { next_cursor: string | null }).next_cursor;
      if (cursor) world.victimCursors.push(cursor);
    }
    world.fuzzerToken = await svc.token(FUZZER);
  });
  afterAll(async () => {
    if (world.seen.length > 0) {
      reportFigures(`bad input x${scale}`, {
        requests: world.seen.length,
        outcomes: tally(world.seen, (s) => `${s.transport} ${s.outcome}`),
      });
    }
    await world.svc?.close();
  });
  return world;
}
