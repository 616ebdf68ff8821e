import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { insertSessions } from "../support/fixtures.js";
import {
  answerField,
  arithmetic,
  calls,
  capitals,
  completedSessions,
  DAY,
  feedbackOf,
  historyRows,
  isFocused,
  OUTPUT,
  openServed,
  progress,
  rawLog,
  scored,
  svc,
  tabTo,
  useBrowserHarness,
  waitForHistory,
} from "./browser-harness.js";

/**
 * The practice page (examples/web), built with Vite, in Debian's Chromium
 * against the real service, served by the service itself: a person
 * practising with the keyboard, and an expired session. The history over
 * other origins and CORS: practice-history.test.ts.
 */
useBrowserHarness();

describe("the practice page in Chromium", () => {
  it("a person practises a quiz start to finish with the keyboard, reloading mid-way", async () => {
    // Five earlier sessions, for the chart: 25%, 50%, 50%, 75%, 100%.
    await insertSessions(svc.db, completedSessions("dana", capitals, [1, 2, 2, 3, 4]));
    const { page, consoleErrors, token } = await openServed("dana", capitals);
    const rpcs: { method: string; traceparent: string | undefined }[] = [];
    page.on("request", (r) => {
      const path = new URL(r.url()).pathname;
      if (path.startsWith("/practice.v1.")) {
        rpcs.push({ method: path.split("/").pop() ?? "", traceparent: r.headers().traceparent });
      }
    });

    await expect.poll(() => page.getByRole("heading", { level: 1 }).textContent()).toBe("Capitals");
    expect(await page.locator("#who").textContent()).toBe("Signed in as dana");
    const start = page.getByRole("button", { name: "Start practice" });
    await tabTo(page, start);
    await page.keyboard.press("Enter");

    // A new session; the focus goes to the first question, whose field is named by its prompt.
    await expect
      .poll(() => progress(page).textContent())
      .toBe("Started a new session. 0 of 4 answered.");
    const sessionId = await page.locator("#session").getAttribute("data-session-id");
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(
      await page.getByRole("button", { name: /^Submit answer/ }).evaluateAll((b) => b.length),
    ).toBe(4);
    expect(await isFocused(answerField(page, "Capital of France?"))).toBe(true);

    await page.keyboard.type("Paris");
    await page.keyboard.press("Enter");
    await expect.poll(() => feedbackOf(page, "Capital of France?").textContent()).toBe("✓ Correct");
    // Every call carries W3C trace context, sampled; each interaction is a trace of its own.
    expect(rpcs.map((r) => r.method)).toEqual(
      expect.arrayContaining(["StartSession", "SubmitAnswer"]),
    );
    for (const { traceparent } of rpcs)
      expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const traceOf = (method: string) =>
      rpcs.find((r) => r.method === method)?.traceparent?.split("-")[1];
    expect(traceOf("SubmitAnswer")).not.toBe(traceOf("StartSession"));
    // The focus moved on to the next question: a wrong answer this time.
    expect(await isFocused(answerField(page, "Capital of Japan?"))).toBe(true);
    await page.keyboard.type("Kyoto");
    await page.keyboard.press("Enter");
    await expect
      .poll(() => feedbackOf(page, "Capital of Japan?").textContent())
      .toBe("✗ Not correct");
    await expect.poll(() => progress(page).textContent()).toBe("2 of 4 answered.");
    expect((await historyRows(page))[0]).toMatchObject({
      id: sessionId,
      result: "in progress",
      answers: "2 of 4 answered",
    });
    await page.screenshot({ path: join(OUTPUT, "1-practising.png"), fullPage: true });

    // Reload mid-way: the same session comes back with its two answers.
    await page.reload();
    await expect
      .poll(() => progress(page).textContent())
      .toBe("Resumed your session. 2 of 4 answered.");
    expect(await page.locator("#session").getAttribute("data-session-id")).toBe(sessionId);
    expect(await answerField(page, "Capital of France?").inputValue()).toBe("Paris");
    expect(await answerField(page, "Capital of Japan?").inputValue()).toBe("Kyoto");
    expect(await feedbackOf(page, "Capital of Japan?").textContent()).toBe("✗ Not correct");
    expect(
      await page.getByRole("button", { name: /^Submit answer/ }).evaluateAll((b) => b.length),
    ).toBe(2);
    await page.screenshot({ path: join(OUTPUT, "2-resumed-after-reload.png"), fullPage: true });

    // An empty answer is not sent.
    const submitsBefore = calls("PracticeSessionService", "SubmitAnswer");
    await tabTo(page, answerField(page, "Capital of Canada?"));
    await page.keyboard.press("Enter");
    await expect
      .poll(() => feedbackOf(page, "Capital of Canada?").textContent())
      .toBe("Type an answer first.");
    await page.keyboard.type("Ottawa");
    await page.keyboard.press("Enter");
    await expect.poll(() => feedbackOf(page, "Capital of Canada?").textContent()).toBe("✓ Correct");
    await page.keyboard.type("Canberra");
    await page.keyboard.press("Enter");
    await expect.poll(() => progress(page).textContent()).toBe("4 of 4 answered.");
    expect(calls("PracticeSessionService", "SubmitAnswer")).toBe(submitsBefore + 2);

    // All answered: the focus is on "Complete session".
    const complete = page.getByRole("button", { name: "Complete session" });
    expect(await isFocused(complete)).toBe(true);
    await page.keyboard.press("Enter");

    // The score and the review: each question, the answer, right or not, the correct answer.
    await expect.poll(() => page.locator("#score").textContent()).toBe("75%");
    const review = page.getByRole("table", { name: "Review" });
    expect(
      await review
        .locator("tbody tr")
        .evaluateAll((rows) =>
          rows.map((row) => [...row.children].map((cell) => cell.textContent)),
        ),
    ).toEqual([
      ["Capital of France?", "Paris", "Correct", "Paris"],
      ["Capital of Japan?", "Kyoto", "Not correct", "Tokyo"],
      ["Capital of Canada?", "Ottawa", "Correct", "Ottawa"],
      ["Capital of Australia?", "Canberra", "Correct", "Canberra"],
    ]);

    // The history, newest first: this session on top, its start to the second.
    await waitForHistory(page, "All 6 sessions shown.");
    const rows = await historyRows(page);
    expect(rows[0]).toMatchObject({ id: sessionId, result: scored(75), answers: "3 of 4 correct" });
    expect(rows.map((r) => r.result)).toEqual([75, 100, 75, 50, 50, 25].map(scored));
    expect(await page.locator("#history time").first().textContent()).toMatch(
      /^\w{3} \d{1,2}, \d{4}, \d{1,2}:\d{2}:\d{2}\s[AP]M$/,
    );

    // The chart of scores over time: one point per completed session.
    const chart = page.getByRole("img", { name: /scores/i });
    expect(await chart.getAttribute("aria-label")).toMatch(
      /^Scores over time: 6 completed sessions from .+; latest 75%, best 100%, average 63%$/,
    );
    expect(await chart.locator("circle").count()).toBe(6);

    await page.screenshot({ path: join(OUTPUT, "3-review-and-history.png"), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: join(OUTPUT, "4-review-phone.png"), fullPage: true });

    // "Practise again": a new session, on top of the history, in progress.
    await tabTo(page, page.getByRole("button", { name: "Practise again" }));
    await page.keyboard.press("Enter");
    await expect
      .poll(() => progress(page).textContent())
      .toBe("Started a new session. 0 of 4 answered.");
    expect(await isFocused(answerField(page, "Capital of France?"))).toBe(true);
    expect(await page.locator("#result").isVisible()).toBe(false);
    await waitForHistory(page, "All 7 sessions shown.");
    expect((await historyRows(page))[0]).toMatchObject({
      result: "in progress",
      answers: "0 of 4 answered",
    });

    // The calls went to the page's own origin, over Connect; the token, in the
    // fragment, never reached the service's logs.
    expect(calls("QuizService", "GetQuiz")).toBeGreaterThanOrEqual(2);
    expect(calls("PracticeSessionService", "CompleteSession")).toBe(1);
    expect(calls("PracticeSessionService", "GetSession")).toBe(1);
    expect(rawLog.some((line) => line.includes(token))).toBe(false);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });

  it("shows an expired session as expired, and starts afresh when asked", async () => {
    const now = svc.clock.now().getTime();
    await insertSessions(svc.db, [
      {
        id: "019a0000-0000-7000-8000-00000000e001",
        userId: "erin",
        quizId: arithmetic,
        startedAt: new Date(now - 8 * DAY),
        totalQuestions: 3,
      },
    ]);
    const { page, consoleErrors } = await openServed("erin", arithmetic);
    await expect
      .poll(() => page.locator("#intro-text").textContent())
      .toBe("Your last session expired: unfinished sessions last 7 days. Start a new one.");
    await waitForHistory(page, "1 session shown.");
    expect(await historyRows(page)).toMatchObject([{ result: "expired" }]);

    await page.getByRole("button", { name: "Start practice" }).click();
    await expect
      .poll(() => progress(page).textContent())
      .toBe("Started a new session. 0 of 3 answered.");
    await waitForHistory(page, "1 session shown.");
    expect(await historyRows(page)).toMatchObject([{ result: "in progress" }]);

    // The session is eight days old by the time the answer comes (moved back
    // in the database): the service refuses it, the page says so, offers a
    // new start, and the history shows it expired.
    await answerField(page, "7 * 8?").fill("56");
    await svc.db
      .updateTable("practice_sessions")
      .set({ started_at: new Date(now - 8 * DAY) })
      .where("user_id", "=", "erin")
      .where("completed_at", "is", null)
      .execute();
    await page.getByRole("button", { name: "Submit answer to question 1" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toMatch(/expired/);
    expect(await page.getByRole("button", { name: "Start practice" }).isVisible()).toBe(true);
    await waitForHistory(page, "1 session shown.");
    expect(await historyRows(page)).toMatchObject([{ result: "expired" }]);
    await page.screenshot({ path: join(OUTPUT, "5-expired.png"), fullPage: true });
    // The refusal itself, which Chromium logs as a failed resource, and nothing else.
    expect(consoleErrors).toEqual([
      "Failed to load resource: the server responded with a status of 400 (Bad Request)",
    ]);
    await page.close();
  });
});
