import { describe, expect, it } from "vitest";
import { isDatabaseId, isSessionId, isStale, STALE_AFTER_MS, staleCutoff } from "./session.js";

const now = new Date("2026-11-22T12:00:00.000Z");
const summary = (startedAt: Date, completedAt: Date | null = null) => ({
  id: "x",
  quizId: "1",
  startedAt,
  completedAt,
  totalQuestions: 1,
  correctAnswers: 0,
});

describe("stale sessions", () => {
  it("are in progress and started more than 7 days ago", () => {
    expect(staleCutoff(now).toISOString()).toBe("2026-11-15T12:00:00.000Z");
    expect(isStale(summary(new Date(now.getTime() - STALE_AFTER_MS - 1)), now)).toBe(true);
  });

  it("exclude a session exactly 7 days old", () => {
    expect(isStale(summary(new Date(now.getTime() - STALE_AFTER_MS)), now)).toBe(false);
  });

  it("exclude completed sessions, however old", () => {
    expect(isStale(summary(new Date(0), new Date(1)), now)).toBe(false);
  });
});

describe("isDatabaseId", () => {
  it("accepts decimal BIGINT UNSIGNED values", () => {
    expect(isDatabaseId("1")).toBe(true);
    expect(isDatabaseId("18446744073709551615")).toBe(true);
  });

  it.each([
    "",
    "0",
    "-1",
    "01",
    "1.5",
    "1e3",
    " 1",
    "18446744073709551616",
    "99999999999999999999",
    "abc",
    "1; DROP TABLE quizzes",
  ])("refuses %j", (raw) => {
    expect(isDatabaseId(raw)).toBe(false);
  });
});

describe("isSessionId", () => {
  it("accepts lowercase UUID text only", () => {
    expect(isSessionId("01a2012c-5e61-726d-93d3-b1381cdf0235")).toBe(true);
    expect(isSessionId("01A2012C-5E61-726D-93D3-B1381CDF0235")).toBe(false);
    expect(isSessionId("01a2012c5e61726d93d3b1381cdf0235")).toBe(false);
    expect(isSessionId("")).toBe(false);
  });
});
