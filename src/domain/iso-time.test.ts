import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isoTime } from "./iso-time.js";

const MIN_MS = -62_135_596_800_000;
const MAX_MS = 253_402_300_799_999;

describe("isoTime: Date#toISOString's text", () => {
  it("for any millisecond of years 0001–9999, and around 1970 and today", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: MIN_MS, max: MAX_MS }),
          fc.integer({ min: -400 * 86_400_000, max: 400 * 86_400_000 }),
          fc.integer({ min: 1.7e12, max: 1.9e12 }),
        ),
        (ms) => {
          expect(isoTime(ms)).toBe(new Date(ms).toISOString());
        },
      ),
      { numRuns: 20_000 },
    );
  });

  it("for times in runs, as a page has them: in one hour, then the next, then back", () => {
    const start = Date.UTC(2026, 10, 26, 15, 59, 58, 998);
    for (const step of [1, 7, 999, 1000, 61_001, 3_599_999]) {
      for (let i = 0; i < 50; i++) {
        const ms = start + ((i * step) % 7_200_000) * (i % 3 === 2 ? -1 : 1);
        expect(isoTime(ms)).toBe(new Date(ms).toISOString());
      }
    }
  });

  it("at the edges of days, leap days, centuries and the range", () => {
    for (const iso of [
      "0001-01-01T00:00:00.000Z",
      "0004-02-29T23:59:59.999Z",
      "1600-02-29T12:00:00.001Z",
      "1900-02-28T23:59:59.999Z",
      "1900-03-01T00:00:00.000Z",
      "1969-12-31T23:59:59.999Z",
      "1970-01-01T00:00:00.000Z",
      "2000-02-29T00:00:00.010Z",
      "2100-03-01T00:00:00.100Z",
      "9999-12-31T23:59:59.999Z",
    ]) {
      expect(isoTime(Date.parse(iso))).toBe(iso);
    }
  });

  it("hour by hour across days, as a page's times come (same day, next day)", () => {
    const start = Date.parse("2026-02-27T20:00:00.000Z");
    for (let ms = start; ms < start + 5 * 86_400_000; ms += 3_599_999) {
      expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it("outside the range, toISOString's own answer", () => {
    expect(isoTime(MAX_MS + 1)).toBe("+010000-01-01T00:00:00.000Z");
    expect(isoTime(MIN_MS - 1)).toBe("0000-12-31T23:59:59.999Z");
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
  });
});
