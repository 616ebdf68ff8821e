import { describe, expect, it } from "vitest";
import { isCorrectAnswer, scorePercentage } from "./scoring.js";

const done = new Date("2026-01-01T00:00:00Z");

describe("scorePercentage", () => {
  it("is null while the session is in progress", () => {
    expect(scorePercentage(3, 4, null)).toBeNull();
  });

  it("rounds correct / total * 100 to the nearest integer, halves up", () => {
    expect(scorePercentage(3, 4, done)).toBe(75);
    expect(scorePercentage(1, 3, done)).toBe(33);
    expect(scorePercentage(2, 3, done)).toBe(67);
    expect(scorePercentage(1, 8, done)).toBe(13);
    expect(scorePercentage(7, 8, done)).toBe(88);
    expect(scorePercentage(0, 5, done)).toBe(0);
    expect(scorePercentage(5, 5, done)).toBe(100);
  });

  it("matches Math.round(c / t * 100) wherever that is not a binary-fraction artefact", () => {
    for (let total = 1; total <= 200; total++) {
      for (let correct = 0; correct <= total; correct++) {
        const exact = (correct * 100) / total;
        const expected = Math.floor(exact) + (exact - Math.floor(exact) >= 0.5 ? 1 : 0);
        expect(scorePercentage(correct, total, done)).toBe(expected);
      }
    }
  });
});

describe("isCorrectAnswer", () => {
  it("ignores surrounding white space and case", () => {
    expect(isCorrectAnswer("  paris\n", "Paris")).toBe(true);
    expect(isCorrectAnswer("PARIS", "paris")).toBe(true);
  });

  it("compares Unicode text in one normal form", () => {
    expect(isCorrectAnswer("Caf\u0065\u0301", "Café")).toBe(true);
  });

  it("does not ignore inner differences", () => {
    expect(isCorrectAnswer("par is", "paris")).toBe(false);
    expect(isCorrectAnswer("paris!", "paris")).toBe(false);
    expect(isCorrectAnswer("", "paris")).toBe(false);
  });
});
