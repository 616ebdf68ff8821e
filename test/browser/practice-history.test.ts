import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { insertSessions, type SessionRow } from "../support/fixtures.js";
import {
  calls,
  capitals,
  historyRows,
  loadMore,
  OUTPUT,
  openElsewhere,
  page1,
  page2,
  preflights,
  progress,
  requests,
  scored,
  svc,
  useBrowserHarness,
  waitForHistory,
} from "./browser-harness.js";

/**
 * The practice page's static build on other origins than the service's, in
 * Debian's Chromium: a long history paged with "Load more" over Connect and
 * gRPC-Web from an origin in CORS_ORIGINS, and the refusal the browser makes
 * for an origin that is not.
 */
useBrowserHarness();

describe("the practice page in Chromium, from other origins", () => {
  describe("the history of 45 sessions (44 completed, 1 in progress), from another origin", () => {
    const USER = "alice";
    /** Newest first, as the page must show them. */
    let expected: { id: string; startedAt: string; result: string; answers: string }[];

    beforeAll(async () => {
      const base = svc.clock.now().getTime() - 3_600_000;
      const rows: SessionRow[] = [];
      expected = [];
      for (let i = 0; i < 45; i++) {
        // Pairs share started_at, so the id tie-break crosses page boundaries (19/20, 39/40).
        const startedAt = new Date(base - Math.floor((i + 1) / 2) * 3 * 3_600_000);
        const id = `019a0000-0000-7000-8000-${(1000 - i).toString(16).padStart(12, "0")}`;
        const total = 5 + (i % 8);
        const inProgress = i === 0;
        const correct = inProgress ? 0 : (i * 7) % (total + 1);
        rows.push({
          id,
          userId: USER,
          quizId: capitals,
          startedAt,
          completedAt: inProgress ? null : new Date(startedAt.getTime() + 600_000),
          totalQuestions: total,
          correctAnswers: correct,
        });
        expected.push({
          id,
          startedAt: startedAt.toISOString(),
          result: inProgress ? "in progress" : scored(Math.round((correct / total) * 100)),
          answers: inProgress ? `0 of ${total} answered` : `${correct} of ${total} correct`,
        });
      }
      // Rows go in shuffled, so the order on the page is the service's doing.
      await insertSessions(
        svc.db,
        [...rows].sort((a, b) => (a.id.slice(-3) < b.id.slice(-3) ? -1 : 1)).reverse(),
      );
    });

    it("pages through all, completed and in-progress sessions with load more", async () => {
      const preflightsBefore = preflights();
      const { page, consoleErrors } = await openElsewhere(page1.origin, USER, capitals);
      const completed = expected.filter((s) => s.result !== "in progress");
      expect(completed).toHaveLength(44);

      // All: 20 + 20 + 5, newest first, scores for completed sessions.
      await waitForHistory(page, "Showing the newest 20 sessions.");
      expect(await historyRows(page)).toEqual(expected.slice(0, 20));
      await loadMore(page).click();
      await waitForHistory(page, "Showing the newest 40 sessions.");
      expect(await historyRows(page)).toEqual(expected.slice(0, 40));
      await loadMore(page).click();
      await waitForHistory(page, "All 45 sessions shown.");
      expect(await historyRows(page)).toEqual(expected);
      expect(await loadMore(page).isVisible()).toBe(false);

      // Completed: 20 + 20 + 4.
      await page.getByLabel("Show").selectOption({ label: "Completed" });
      await waitForHistory(page, "Showing the newest 20 sessions.");
      expect(await historyRows(page)).toEqual(completed.slice(0, 20));
      await loadMore(page).click();
      await waitForHistory(page, "Showing the newest 40 sessions.");
      await loadMore(page).click();
      await waitForHistory(page, "All 44 sessions shown.");
      expect(await historyRows(page)).toEqual(completed);
      expect(await loadMore(page).isVisible()).toBe(false);

      // In progress: the one.
      await page.getByLabel("Show").selectOption({ label: "In progress" });
      await waitForHistory(page, "1 session shown.");
      expect(await historyRows(page)).toEqual(expected.slice(0, 1));

      // The in-progress session was resumed on opening; the chart has the 44 others.
      await expect
        .poll(() => progress(page).textContent())
        .toBe("Resumed your session. 0 of 5 answered.");
      expect(
        await page
          .getByRole("img", { name: /scores/i })
          .locator("circle")
          .count(),
      ).toBe(44);

      // Real cross-origin calls: the browser asked first (a preflight, for the
      // authorization header), then sent Connect's POSTs.
      expect(preflights()).toBeGreaterThan(preflightsBefore);
      expect(consoleErrors).toEqual([]);
      await page.screenshot({ path: join(OUTPUT, "6-history-45.png"), fullPage: true });
      await page.close();
    });

    it("works over gRPC-Web too", async () => {
      const before = requests((l) => l.transport === "grpc-web");
      const { page, consoleErrors } = await openElsewhere(page1.origin, USER, capitals, {
        protocol: "grpc-web",
      });
      await waitForHistory(page, "Showing the newest 20 sessions.");
      expect(await historyRows(page)).toEqual(expected.slice(0, 20));
      await expect
        .poll(() => page.getByRole("heading", { level: 1 }).textContent())
        .toBe("Capitals");
      // GetQuiz, ListSessions (active, history, chart), ListDueQuestions and StartSession (resume).
      await expect.poll(() => requests((l) => l.transport === "grpc-web")).toBe(before + 6);
      expect(consoleErrors).toEqual([]);
      await page.close();
    });
  });

  it("fails in the browser when the page's origin is not in CORS_ORIGINS", async () => {
    const listsBefore = calls("PracticeSessionService", "ListSessions");
    const preflightsBefore = preflights();
    const { page } = await openElsewhere(page2.origin, "bob", capitals);
    await waitForHistory(page, "Could not load the history.");
    // Each part says what failed, beside it: the quiz and the history.
    await expect
      .poll(() => page.getByRole("alert").allTextContents())
      .toEqual([expect.stringContaining("CORS_ORIGINS"), expect.stringContaining("CORS_ORIGINS")]);
    expect(await page.locator("#history-error").textContent()).toContain("CORS_ORIGINS");
    // The preflights reached the service; the browser then refused to send the calls.
    await expect.poll(() => preflights()).toBeGreaterThan(preflightsBefore);
    expect(calls("PracticeSessionService", "ListSessions")).toBe(listsBefore);
    await page.screenshot({ path: join(OUTPUT, "7-cors-refused.png") });
    await page.close();
  });
});
