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

/** Inserts a demo study guide with two quizzes; returns their ids. */
export async function insertDemoContent(db: Db) {
  return db.transaction().execute(async (trx) => {
    const guide = await trx
      .insertInto("study_guides")
      .values({ title: "Demo study guide" })
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
