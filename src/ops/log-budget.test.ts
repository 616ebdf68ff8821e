import { describe, expect, it } from "vitest";
import { LogBudget } from "./log-budget.js";

describe("LogBudget", () => {
  it("writes a burst of perSecond lines, then one per 1/perSecond s, each with the count left out before it", () => {
    let now = 0;
    const budget = new LogBudget(10, () => now);
    const burst = Array.from({ length: 12 }, () => budget.take());
    expect(burst).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, undefined, undefined]);
    now += 50; // half a line
    expect(budget.take()).toBeUndefined();
    now += 50;
    expect(budget.take()).toBe(3);
    expect(budget.take()).toBeUndefined();
    // A quiet minute refills the burst, no more.
    now += 60_000;
    const refilled = Array.from({ length: 11 }, () => budget.take());
    expect(refilled.filter((n) => n !== undefined)).toEqual([1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  });
});
