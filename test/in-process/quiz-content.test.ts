import { Code, ConnectError } from "@connectrpc/connect";
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import type { QuizJson } from "../../src/rest/schemas.js";
import { insertQuestion, insertQuiz } from "../support/fixtures.js";
import { fileService } from "../support/in-process.js";

const svc = await fileService();

const USER = "quiz-reader";

async function getQuiz(path: string, user: string | null = USER) {
  const res = await svc.rest(user, "GET", path);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A quiz whose questions were written out of order, one with a position shared by two. */
async function quizOutOfOrder() {
  const quiz = await insertQuiz(svc.db, { questions: 0 });
  const third = await insertQuestion(svc.db, quiz.quizId, 30);
  const first = await insertQuestion(svc.db, quiz.quizId, 10);
  const secondA = await insertQuestion(svc.db, quiz.quizId, 20);
  const secondB = await insertQuestion(svc.db, quiz.quizId, 20);
  return { ...quiz, ordered: [first, secondA, secondB, third] };
}

describe("GetQuiz: a quiz's content", () => {
  it("over REST: id, study guide, title and the questions by position, with their prompts", async () => {
    const quiz = await quizOutOfOrder();
    const res = await getQuiz(`/quizzes/${quiz.quizId}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = JSON.parse(res.text) as QuizJson;
    expect(body).toEqual({
      id: quiz.quizId,
      study_guide_id: quiz.studyGuideId,
      title: "Quiz",
      questions: [
        { id: quiz.ordered[0], position: 1, prompt: "Q10?" },
        { id: quiz.ordered[1], position: 2, prompt: "Q20?" },
        { id: quiz.ordered[2], position: 3, prompt: "Q20?" },
        { id: quiz.ordered[3], position: 4, prompt: "Q30?" },
      ],
    });
    const underApi = await getQuiz(`/api/quizzes/${quiz.quizId}`);
    expect(underApi.status).toBe(200);
    expect(JSON.parse(underApi.text)).toEqual(body);
  });

  it("numbers the questions as a session started now numbers its snapshot", async () => {
    const quiz = await quizOutOfOrder();
    const { body } = await svc
      .rest("quiz-snapshot", "POST", `/quizzes/${quiz.quizId}/sessions`)
      .then(async (r) => ({ body: (await r.json()) as { questions: unknown[] } }));
    const content = JSON.parse((await getQuiz(`/quizzes/${quiz.quizId}`)).text) as QuizJson;
    expect(body.questions).toEqual(
      content.questions.map((q) => ({
        position: q.position,
        question_id: q.id,
        correct_answer: null,
      })),
    );
  });

  it("never sends a correct answer, on any transport", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 0 });
    await svc.db
      .insertInto("questions")
      .values({
        quiz_id: quiz.quizId,
        position: 1,
        prompt: "Capital of France?",
        correct_answer: "Paris-secret",
      })
      .execute();
    const rest = await getQuiz(`/quizzes/${quiz.quizId}`);
    expect(rest.status).toBe(200);
    expect(rest.text).not.toContain("Paris-secret");
    expect(rest.text).not.toContain("correct");

    const headers = await svc.auth(USER);
    const grpc = await svc.quizRpc.getQuiz({ quizId: quiz.quizId }, { headers });
    const connect = await svc.quizRpc.getQuiz({ quizId: quiz.quizId }, { headers });
    for (const res of [grpc, connect]) {
      expect(JSON.stringify(res)).not.toContain("Paris-secret");
      expect(res.quiz?.questions.map((q) => q.prompt)).toEqual(["Capital of France?"]);
    }
  });

  it("over RPC and Connect: the same content as REST", async () => {
    const quiz = await quizOutOfOrder();
    const rest = JSON.parse((await getQuiz(`/quizzes/${quiz.quizId}`)).text) as QuizJson;
    const headers = await svc.auth(USER);
    const grpc = await svc.quizRpc.getQuiz({ quizId: quiz.quizId }, { headers });
    const connect = await svc.quizRpc.getQuiz({ quizId: quiz.quizId }, { headers });
    for (const res of [grpc, connect]) {
      expect(res.quiz).toMatchObject({
        id: rest.id,
        studyGuideId: rest.study_guide_id,
        title: rest.title,
      });
      expect(
        res.quiz?.questions.map((q) => ({ id: q.id, position: q.position, prompt: q.prompt })),
      ).toEqual(rest.questions);
    }
  });

  it("gives a live quiz without questions with an empty list", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 0 });
    const res = await getQuiz(`/quizzes/${quiz.quizId}`);
    expect(res.status).toBe(200);
    expect((JSON.parse(res.text) as QuizJson).questions).toEqual([]);
  });

  it("answers a missing quiz, a soft-deleted one, one under a soft-deleted study guide and a non-id with the list's 404 body", async () => {
    const deleted = await insertQuiz(svc.db, { quizDeleted: true });
    const orphan = await insertQuiz(svc.db, { studyGuideDeleted: true });
    const list = await getQuiz("/quizzes/999999/sessions");
    expect(list.status).toBe(404);
    // Any id of at most 64 characters (the request's rule) that names no live quiz.
    const ids = ["999999", deleted.quizId, orphan.quizId, "abc", "0", "1".repeat(64)];
    for (const id of ids) {
      for (const prefix of ["", "/api"]) {
        const res = await getQuiz(`${prefix}/quizzes/${id}`);
        expect(res.status, id).toBe(404);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(res.text, id).toBe(list.text);
      }
    }
    const headers = await svc.auth(USER);
    for (const id of ids.slice(0, 5)) {
      const grpc = await svc.quizRpc.getQuiz({ quizId: id }, { headers }).catch((e) => e);
      expect((grpc as ConnectError).code, id).toBe(Code.NotFound);
      expect((grpc as ConnectError).rawMessage).toBe("quiz not found");
      const connect = await svc.quizRpc.getQuiz({ quizId: id }, { headers }).catch((e) => e);
      expect(ConnectError.from(connect).code, id).toBe(Code.NotFound);
    }
  });

  it("shows questions deleted or added since: it is the quiz now, not a snapshot", async () => {
    const quiz = await insertQuiz(svc.db, { questions: 2 });
    await sql`DELETE FROM questions WHERE id = ${quiz.questionIds[0]}`.execute(svc.db);
    const added = await insertQuestion(svc.db, quiz.quizId, 3);
    const body = JSON.parse((await getQuiz(`/quizzes/${quiz.quizId}`)).text) as QuizJson;
    expect(body.questions.map((q) => q.id)).toEqual([quiz.questionIds[1], added]);
  });

  it("needs a valid token like every call (401 + WWW-Authenticate; unauthenticated over RPC)", async () => {
    const quiz = await insertQuiz(svc.db);
    const res = await getQuiz(`/quizzes/${quiz.quizId}`, null);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const grpc = await svc.quizRpc.getQuiz({ quizId: quiz.quizId }).catch((e) => e);
    expect((grpc as ConnectError).code).toBe(Code.Unauthenticated);
  });
});
