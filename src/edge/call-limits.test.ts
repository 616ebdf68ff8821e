import { afterEach, describe, expect, it, vi } from "vitest";
import { withRetries } from "../app/retry.js";
import { callLimits, databaseLimits, statementLimits } from "./call-limits.js";

const conflict = Object.assign(new Error("Deadlock found"), { errno: 1213 });

describe("a call's limits", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("give retries half of what the call has left, from what it has left now", () => {
    let left = 8000;
    const limits = callLimits(() => left);
    expect(limits.retryBudgetMs()).toBe(4000);
    left = 300;
    expect(limits.retryBudgetMs()).toBe(150);
    left = -5;
    expect(limits.retryBudgetMs()).toBe(0);
  });

  it("let no retry sleep past the call's deadline, however long its back-off", async () => {
    // The longest back-off the policy allows, every time.
    vi.spyOn(Math, "random").mockReturnValue(0.99);
    const deadline = performance.now() + 300;
    const limits = callLimits(() => deadline - performance.now());
    let runs = 0;
    const policy = { maxAttempts: 8, baseDelayMs: 100, maxDelayMs: 1000, budgetMs: 0 };
    const started = performance.now();
    await expect(
      withRetries(
        async () => {
          runs++;
          throw conflict;
        },
        () => true,
        { ...policy, budgetMs: limits.retryBudgetMs() },
      ),
    ).rejects.toBe(conflict);
    // Generous bound: the deadline is 300 ms away; a back-off of the server's
    // REQUEST_TIMEOUT_MS budget would sleep 0.1 + 0.2 + 0.4 s past it.
    expect(performance.now() - started).toBeLessThan(300);
    expect(runs).toBeGreaterThanOrEqual(1);
  });

  it("let the database's own caps through the longest call the settings allow", () => {
    expect(databaseLimits({ requestTimeoutMs: 60_000 })).toMatchObject({ queryTimeoutMs: 30_000 });
    // REQUEST_TIMEOUT_MS's default: 5 s.
    expect(databaseLimits({ requestTimeoutMs: 10_000 })).toMatchObject({ queryTimeoutMs: 5000 });
    // Statements outside calls (migrations, the relay) keep 5 s; a call's stop at its deadline.
    expect(databaseLimits({ requestTimeoutMs: 1000 })).toMatchObject({ queryTimeoutMs: 5000 });
  });

  it("fail a lock wait within half a statement's cap, kill a session idle in a transaction after twice it", () => {
    expect(statementLimits(5000)).toEqual({
      queryTimeoutMs: 5000,
      lockWaitSeconds: 2,
      idleTransactionSeconds: 10,
      sqliteLockWaitMs: 1000,
    });
    expect(statementLimits(1500)).toMatchObject({ lockWaitSeconds: 1, idleTransactionSeconds: 4 });
    expect(statementLimits(30_000)).toMatchObject({
      lockWaitSeconds: 15,
      idleTransactionSeconds: 60,
    });
  });
});
