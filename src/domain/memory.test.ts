import { describe, expect, it } from "vitest";
import { rememberAnswer } from "./memory.js";

const t0 = new Date("2026-11-01T12:00:00.000Z");
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const at = (ms: number) => new Date(t0.getTime() + ms);

describe("rememberAnswer (FSRS, ts-fsrs 5 defaults, fuzz off)", () => {
  it("schedules a new question a minute on when wrong, ten minutes on when right", () => {
    expect(rememberAnswer(undefined, false, t0).dueAt).toEqual(at(MINUTE));
    expect(rememberAnswer(undefined, true, t0)).toMatchObject({
      dueAt: at(10 * MINUTE),
      lastAnsweredAt: t0,
      lastCorrect: true,
      reps: 1,
      lapses: 0,
    });
  });

  it("right again two days on: due eleven days after that", () => {
    const first = rememberAnswer(undefined, true, t0);
    const second = rememberAnswer(first, true, at(2 * DAY));
    expect(second.dueAt).toEqual(at(13 * DAY));
    expect(second.reps).toBe(2);
  });

  it("a wrong answer once learned is a lapse, and due sooner than a right one", () => {
    const learned = rememberAnswer(rememberAnswer(undefined, true, t0), true, at(2 * DAY));
    const wrong = rememberAnswer(learned, false, at(13 * DAY));
    const right = rememberAnswer(learned, true, at(13 * DAY));
    expect(wrong.lapses).toBe(1);
    expect(wrong.dueAt.getTime()).toBeLessThan(right.dueAt.getTime());
  });

  it("counts an answer stamped before the previous one at the previous one's time", () => {
    const first = rememberAnswer(undefined, false, t0);
    const early = rememberAnswer(first, true, at(-5000));
    expect(early.lastAnsweredAt).toEqual(t0);
    expect(early).toEqual(rememberAnswer(first, true, t0));
  });
});
