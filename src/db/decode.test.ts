import { describe, expect, it } from "vitest";
import { toSession, toSummary } from "./decode.js";

const session = {
  id: "019a0000-0000-7000-8000-000000000001",
  quiz_id: "1",
  started_at: new Date("2026-11-22T00:00:00.000Z"),
  completed_at: null,
  total_questions: 3,
  correct_answers: 1,
  answered_questions: 2,
  mode_code: 0,
};
const answer = (id: string, at: string) => ({
  ...session,
  answer_id: id,
  question_id: id,
  user_answer: "x",
  is_correct: 1,
  answered_at: new Date(at),
});

describe("toSession", () => {
  it("puts answers oldest first, then by id as a number, whatever order the rows came in", () => {
    const rows = [
      answer("10", "2026-11-22T00:00:01.000Z"),
      answer("11", "2026-11-22T00:00:00.500Z"),
      answer("9", "2026-11-22T00:00:01.000Z"),
    ];
    expect(toSession(rows)?.answers.map((a) => a.questionId)).toEqual(["11", "9", "10"]);
  });

  it("is undefined without a session, and has no answers for a session without any", () => {
    expect(toSession([])).toBeUndefined();
    const none = {
      ...session,
      answer_id: null,
      question_id: null,
      user_answer: null,
      is_correct: null,
      answered_at: null,
    };
    expect(toSession([{ ...none, id: null }])).toBeUndefined();
    expect(toSession([none])?.answers).toEqual([]);
  });
});

describe("toSummary", () => {
  it("reads the mode from `mode_code`, a number or the string a driver may give for it", () => {
    const mode = (mode_code: number | string) => toSummary({ ...session, mode_code })?.mode;
    expect([mode(0), mode(1), mode(2), mode("0"), mode("1"), mode("2")]).toEqual([
      "full",
      "review",
      "missed",
      "full",
      "review",
      "missed",
    ]);
  });
});
