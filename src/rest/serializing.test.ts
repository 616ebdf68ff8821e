import fastJson from "fast-json-stringify";
import { describe, expect, it } from "vitest";
import { isoTime } from "../domain/iso-time.js";
import {
  AnswerResult,
  DueQuestions,
  NothingDueProblem,
  SessionDetail,
  SessionPage,
} from "./schemas.js";
import { forSerializing } from "./serializing.js";

const OPTIONS = { ajv: { validateFormats: false } };
const own = (schema: object) => fastJson(schema, OPTIONS);
const ours = (schema: object) => fastJson(forSerializing(schema) as object, OPTIONS);

// Ends of the range isoTime writes itself, and beyond it (toISOString's own "+" years).
const TIMES = [
  0,
  1,
  999,
  Date.UTC(2026, 10, 26, 16, 5, 7, 89),
  -62_135_596_800_000,
  253_402_300_799_999,
]
  .concat([253_402_300_800_000, -62_135_596_800_001, 8.64e15])
  .map(isoTime);
const at = (i: number) => TIMES[i % TIMES.length] ?? isoTime(0);

const summary = (i: number) => ({
  id: `0190a1b2-c3d4-7e5f-8a9b-${String(i).padStart(12, "0")}`,
  quiz_id: String(1000 + i),
  started_at: at(i),
  completed_at: i % 2 ? at(i + 1) : null,
  total_questions: 10,
  correct_answers: i % 7,
  score_percentage: i % 2 ? (i * 13) % 101 : null,
  answered_questions: i % 11,
  expires_at: i % 2 ? null : at(i + 2),
  mode: (["full", "review", "missed"] as const)[i % 3],
});

const answer = (i: number) => ({
  question_id: i % 4 ? String(i) : null,
  user_answer: i % 5 ? `a "quoted" \\ answer ${i}\n` : null,
  is_correct: i % 3 ? i % 2 === 0 : null,
  answered_at: at(i),
});

// What each response looks like, nulls included, next to the library's own writing of it.
const CASES: [string, object, unknown][] = [
  [
    "a page of sessions",
    SessionPage,
    { sessions: TIMES.map((_, i) => summary(i)), next_cursor: "AbC-_9", has_more: true },
  ],
  ["an empty last page", SessionPage, { sessions: [], next_cursor: null, has_more: false }],
  ["an answer and its session", AnswerResult, { answer: answer(1), session: summary(3) }],
  [
    "a session with answers and snapshot",
    SessionDetail,
    {
      ...summary(2),
      answers: TIMES.map((_, i) => answer(i)),
      questions: [
        { position: 1, question_id: "7", correct_answer: null },
        { position: 2, question_id: null, correct_answer: 'say "hi"' },
      ],
    },
  ],
  [
    "questions due",
    DueQuestions,
    {
      questions: TIMES.map((_, i) => ({
        question_id: String(i + 1),
        position: i + 1,
        due_at: at(i),
        last_answered_at: at(i + 3),
        last_correct: i % 2 === 0,
        reps: i,
        lapses: i % 3,
      })),
      due_count: TIMES.length,
      new_count: 2,
      next_due_at: null,
      next_cursor: "ZDEuMTc2NDI4MDAwMDAwMC4xMg",
    },
  ],
  [
    "nothing due",
    NothingDueProblem,
    {
      type: "about:blank",
      title: "Nothing due",
      status: 409,
      detail: "none",
      code: "failed_precondition",
      next_due_at: at(4),
    },
  ],
];

describe("forSerializing", () => {
  it.each(CASES)("%s: the same JSON as the library's own serializer", (_, schema, value) => {
    const json = ours(schema)(value);
    expect(json).toBe(own(schema)(value));
    expect(JSON.parse(json)).toEqual(value);
  });

  it("writes times unescaped and a nullable scalar with a null test, and leaves the schema as it was", () => {
    const before = JSON.stringify(SessionPage);
    const page = JSON.stringify(forSerializing(SessionPage));
    expect(page).toContain('"format":"unsafe"');
    expect(page).not.toContain('"date-time"');
    expect(page).toContain('"type":["string","null"]');
    expect(JSON.stringify(SessionPage)).toBe(before);
  });
});
