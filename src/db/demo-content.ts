import type { Db } from "./database.js";

const QUIZZES = [
  {
    title: "Capitals",
    questions: [
      ["Capital of France?", "Paris"],
      ["Capital of Japan?", "Tokyo"],
      ["Capital of Canada?", "Ottawa"],
      ["Capital of Australia?", "Canberra"],
    ],
  },
  {
    title: "Arithmetic",
    questions: [
      ["7 * 8?", "56"],
      ["12 + 30?", "42"],
      ["81 / 9?", "9"],
    ],
  },
] as const;

/** Ids of the live quizzes, oldest first (at most `limit`). */
export async function liveQuizIds(db: Db, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom("quizzes")
    .select("id")
    .where("deleted_at", "is", null)
    .orderBy("id")
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** The demo study guide's title: how `ensureDemoContent` recognises it. */
const DEMO_STUDY_GUIDE_TITLE = "Demo study guide";

export interface DemoContent {
  studyGuideId: string;
  quizIds: string[];
  /** False when the demo content was there already and nothing was written. */
  created: boolean;
}

/**
 * The demo study guide with its quizzes: the live one already there (by its
 * title), or a new one. Running it again writes nothing.
 */
export async function ensureDemoContent(db: Db): Promise<DemoContent> {
  const existing = await db
    .selectFrom("study_guides as g")
    .leftJoin("quizzes as z", (join) =>
      join.onRef("z.study_guide_id", "=", "g.id").on("z.deleted_at", "is", null),
    )
    .select(["g.id as studyGuideId", "z.id as quizId"])
    .where("g.title", "=", DEMO_STUDY_GUIDE_TITLE)
    .where("g.deleted_at", "is", null)
    .orderBy("g.id")
    .orderBy("z.id")
    .execute();
  const first = existing[0];
  if (first !== undefined) {
    const quizIds = existing
      .filter((r) => r.studyGuideId === first.studyGuideId && r.quizId !== null)
      .map((r) => r.quizId as string);
    return { studyGuideId: first.studyGuideId, quizIds, created: false };
  }
  return { ...(await insertDemoContent(db)), created: true };
}

/** Inserts a demo study guide with two quizzes; returns their ids. */
export async function insertDemoContent(db: Db) {
  return db.transaction().execute(async (trx) => {
    const guide = await trx
      .insertInto("study_guides")
      .values({ title: DEMO_STUDY_GUIDE_TITLE })
      .executeTakeFirstOrThrow();
    const studyGuideId = String(guide.insertId);
    const quizIds: string[] = [];
    for (const quiz of QUIZZES) {
      const row = await trx
        .insertInto("quizzes")
        .values({ study_guide_id: studyGuideId, title: quiz.title, created_by: "demo-author" })
        .executeTakeFirstOrThrow();
      const quizId = String(row.insertId);
      quizIds.push(quizId);
      await trx
        .insertInto("questions")
        .values(
          quiz.questions.map(([prompt, answer], i) => ({
            quiz_id: quizId,
            position: i + 1,
            prompt,
            correct_answer: answer,
          })),
        )
        .execute();
    }
    return { studyGuideId, quizIds };
  });
}
