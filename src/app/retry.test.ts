import { describe, expect, it, vi } from "vitest";
import { backoffDelay, type RetryPolicy, withRetries } from "./retry.js";

const conflict = Object.assign(new Error("Deadlock found"), { errno: 1213 });
const isConflict = (err: unknown) => (err as { errno?: number }).errno === 1213;
const policy: RetryPolicy = { maxAttempts: 8, baseDelayMs: 1, maxDelayMs: 4, budgetMs: 5_000 };

/** An attempt that fails with `errors` in turn, then returns "done". */
function failing(...errors: unknown[]) {
  let calls = 0;
  const attempt = async () => {
    const err = errors[calls++];
    if (err !== undefined) throw err;
    return "done";
  };
  return { attempt, calls: () => calls };
}

describe("withRetries", () => {
  it("runs a write again after conflicts until it succeeds (a run of 5 here)", async () => {
    const run = failing(conflict, conflict, conflict, conflict, conflict);
    await expect(withRetries(run.attempt, isConflict, policy)).resolves.toBe("done");
    expect(run.calls()).toBe(6);
  });

  it("gives up after maxAttempts runs with the last error", async () => {
    const run = failing(...Array(10).fill(conflict));
    await expect(withRetries(run.attempt, isConflict, policy)).rejects.toBe(conflict);
    expect(run.calls()).toBe(8);
  });

  it("never retries an error it is not told to", async () => {
    const other = new Error("no such table");
    const run = failing(other);
    await expect(withRetries(run.attempt, isConflict, policy)).rejects.toBe(other);
    expect(run.calls()).toBe(1);
  });

  it("starts no retry past the budget", async () => {
    const run = failing(...Array(10).fill(conflict));
    const noTime = { ...policy, baseDelayMs: 1000, maxDelayMs: 1000, budgetMs: 0 };
    await expect(withRetries(run.attempt, isConflict, noTime)).rejects.toBe(conflict);
    expect(run.calls()).toBe(1);
  });
});

describe("withRetries and the call's signal", () => {
  it("ends a back-off as soon as the call is stopped, with its reason, and runs no more", async () => {
    vi.spyOn(Math, "random").mockReturnValue(0.99);
    const run = failing(...Array(10).fill(conflict));
    const caller = new AbortController();
    const reason = new Error("the caller left");
    const long = { ...policy, baseDelayMs: 60_000, maxDelayMs: 60_000, budgetMs: 120_000 };
    const started = performance.now();
    setTimeout(() => caller.abort(reason), 20);
    await expect(
      withRetries(run.attempt, isConflict, { ...long, signal: caller.signal }),
    ).rejects.toBe(reason);
    // Generous: the wait it ends is a minute long.
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(run.calls()).toBe(1);
    vi.restoreAllMocks();
  });

  it("after a conflict, starts no retry once the call is stopped", async () => {
    const run = failing(conflict);
    const caller = new AbortController();
    caller.abort(new Error("gone"));
    await expect(
      withRetries(run.attempt, isConflict, { ...policy, signal: caller.signal }),
    ).rejects.toThrow("gone");
    expect(run.calls()).toBe(1);
  });
});

describe("backoffDelay", () => {
  it("waits a random time under a cap that doubles per attempt up to the maximum", () => {
    const p = { ...policy, baseDelayMs: 4, maxDelayMs: 200 };
    const top = () => 0.999_999;
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffDelay(p, n, top))).toEqual([
      3, 7, 15, 31, 63, 127, 199,
    ]);
    expect(backoffDelay(p, 3, () => 0)).toBe(0);
  });
});
