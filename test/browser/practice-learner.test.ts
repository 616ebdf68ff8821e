import { join, resolve } from "node:path";
import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { insertSessions } from "../support/fixtures.js";
import {
  answer,
  answerField,
  arithmetic,
  calls,
  capitals,
  completedSessions,
  historyRows,
  isFocused,
  OUTPUT,
  openServed,
  progress,
  questionStates,
  scored,
  setOffline,
  svc,
  useBrowserHarness,
  waitForHistory,
} from "./browser-harness.js";

/**
 * The practice page as a learner expects it, in Chromium: the list of
 * quizzes, a past session's review from the history, an empty state per
 * filter, score bands in words, the chart's axis on one day, the focus
 * after each answer and on resume, a question before completing with
 * questions left, and no serious or critical axe-core violation.
 */
useBrowserHarness();

/** `UPDATE_DOCS=1 npm run test:browser` writes the README's screenshots into docs/. */
const SHOTS = process.env.UPDATE_DOCS ? resolve("docs") : OUTPUT;

/** The serious and critical axe-core violations on the page as it is now. */
async function axeViolations(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  // axe-core ran its rules here (its checks passed on something).
  expect(results.passes.length).toBeGreaterThan(10);
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" ")) }));
}

/** Starts a session of `user` on `quizId` through the API, with answers, completed or not. */
async function sessionThroughApi(
  user: string,
  quizId: string,
  answers: Record<number, string>,
  complete: boolean,
) {
  const started = (await (await svc.rest(user, "POST", `/quizzes/${quizId}/sessions`)).json()) as {
    id: string;
    questions: { question_id: string }[];
  };
  for (const [index, text] of Object.entries(answers)) {
    const res = await svc.rest(user, "POST", `/sessions/${started.id}/answers`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        question_id: started.questions[Number(index)]?.question_id,
        user_answer: text,
      }),
    });
    expect(res.status).toBe(201);
  }
  if (complete) {
    expect((await svc.rest(user, "POST", `/sessions/${started.id}/complete`)).status).toBe(200);
  }
  return started.id;
}

describe("the practice page a learner expects", () => {
  it("without a quiz, lists the quizzes with the sessions in progress, and opens one", async () => {
    await sessionThroughApi("quinn", capitals, { 0: "Paris" }, false);
    const { page, consoleErrors } = await openServed("quinn");
    await expect
      .poll(() => page.getByRole("heading", { level: 1 }).textContent())
      .toBe("Choose a quiz");
    const items = page.locator("#quiz-list li");
    await expect.poll(() => items.count()).toBe(2);
    expect(await items.allInnerTexts()).toEqual([
      expect.stringMatching(/^Capitals\s+4 questions\s+1 session in progress$/),
      expect.stringMatching(/^Arithmetic\s+3 questions$/),
    ]);
    expect(await page.locator("#catalog-status").textContent()).toBe("2 quizzes.");
    expect(await axeViolations(page)).toEqual([]);

    await page.getByRole("link", { name: "Capitals" }).click();
    await expect
      .poll(() => progress(page).textContent())
      .toBe("Resumed your session. 1 of 4 answered.");
    expect(new URL(page.url()).searchParams.get("quiz")).toBe(capitals);
    // Resumed: the focus is on the first question still to answer.
    expect(await isFocused(answerField(page, "Capital of Japan?"))).toBe(true);

    await page.getByRole("link", { name: "All quizzes" }).click();
    await expect.poll(() => page.locator("#quiz-list li").count()).toBe(2);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });

  it("opens a past session's review from its history row, and back", async () => {
    await sessionThroughApi("hana", capitals, { 0: "Paris", 1: "Kyoto" }, true);
    const { page } = await openServed("hana", capitals);
    await waitForHistory(page, "1 session shown.");
    expect(await historyRows(page)).toMatchObject([
      { result: scored(25), answers: "1 of 4 correct" },
    ]);
    const review = page.getByRole("button", { name: /^Review the session started / });
    await review.click();
    await expect
      .poll(() => page.locator("#result-heading").textContent())
      .toMatch(/^Review of your session of /);
    expect(await isFocused(page.locator("#result"))).toBe(true);
    expect(await page.locator("#score").textContent()).toBe("25%");
    expect(await page.locator("#score-band").textContent()).toBe("low");
    expect(
      await page
        .getByRole("table", { name: "Review" })
        .locator("tbody tr")
        .evaluateAll((rows) =>
          rows.map((row) => [...row.children].map((cell) => cell.textContent)),
        ),
    ).toEqual([
      ["Capital of France?", "Paris", "Correct", "Paris"],
      ["Capital of Japan?", "Kyoto", "Not correct", "Tokyo"],
      ["Capital of Canada?", "—", "Not answered", "Ottawa"],
      ["Capital of Australia?", "—", "Not answered", "Canberra"],
    ]);
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "Close the review" }).click();
    expect(await page.locator("#result").isVisible()).toBe(false);
    expect(await isFocused(review)).toBe(true);
    await page.close();
  });

  it("says what each filter's empty history means", async () => {
    const { page } = await openServed("jude", arithmetic);
    await waitForHistory(
      page,
      "No sessions yet: start practice above, and your sessions appear here.",
    );
    await page.close();

    await insertSessions(svc.db, completedSessions("ivan", arithmetic, [3]));
    const opened = await openServed("ivan", arithmetic);
    await waitForHistory(opened.page, "1 session shown.");
    await opened.page.getByLabel("Show").selectOption({ label: "In progress" });
    await waitForHistory(opened.page, "No session in progress.");
    expect(await historyRows(opened.page)).toEqual([]);
    await opened.page.getByLabel("Show").selectOption({ label: "Completed" });
    await waitForHistory(opened.page, "1 session shown.");
    await opened.page.close();

    await sessionThroughApi("ines", arithmetic, {}, false);
    const active = await openServed("ines", arithmetic);
    await waitForHistory(active.page, "1 session shown.");
    await active.page.getByLabel("Show").selectOption({ label: "Completed" });
    await waitForHistory(active.page, "No completed sessions yet.");
    await active.page.close();
  });

  it("bands scores in words and colours, and shows times on a chart of one day", async () => {
    // Three sessions today, an hour apart: 25%, 75%, 100%.
    const day = new Date(svc.clock.now());
    day.setUTCHours(0, 0, 0, 0);
    const sessions = completedSessions("lola", capitals, [1, 3, 4]).map((s, i) => ({
      ...s,
      startedAt: new Date(day.getTime() + (i + 1) * 3_600_000),
      completedAt: new Date(day.getTime() + (i + 1) * 3_600_000 + 300_000),
    }));
    await insertSessions(svc.db, sessions);
    const { page } = await openServed("lola", capitals);
    await waitForHistory(page, "All 3 sessions shown.");
    expect((await historyRows(page)).map((r) => r.result)).toEqual([
      "100% · good",
      "75% · fair",
      "25% · low",
    ]);
    const colours = await page
      .locator("#history td.scored .pill")
      .evaluateAll((pills) =>
        pills.map((p) => p.ownerDocument.defaultView?.getComputedStyle(p).backgroundColor),
      );
    expect(new Set(colours).size).toBe(3);

    const axis = await page
      .locator(".score-chart text.axis")
      .evaluateAll((labels) =>
        labels.map((l) => l.textContent ?? "").filter((t) => !t.endsWith("%")),
      );
    expect(axis).toEqual(["1:05 AM", "3:05 AM"]);
    await page.close();
  });

  it("moves the focus to the next question left, and asks before completing with some left", async () => {
    const { page } = await openServed("finn", capitals);
    await page.getByRole("button", { name: "Start practice" }).click();
    await expect.poll(() => progress(page).textContent()).toMatch(/^Started/);
    expect(await isFocused(answerField(page, "Capital of France?"))).toBe(true);

    // Second, third, fourth: the focus follows, then goes round to the first.
    await answer(page, "Capital of Japan?", "Tokyo");
    expect(await isFocused(answerField(page, "Capital of Canada?"))).toBe(true);
    await page.keyboard.type("Ottawa");
    await page.keyboard.press("Enter");
    expect(await isFocused(answerField(page, "Capital of Australia?"))).toBe(true);
    await page.keyboard.type("Canberra");
    await page.keyboard.press("Enter");
    expect(await isFocused(answerField(page, "Capital of France?"))).toBe(true);
    await expect.poll(() => questionStates(page)).toEqual(["empty", "sent", "sent", "sent"]);

    // Resumed after a reload: the focus is on the question left.
    await page.reload();
    await expect
      .poll(() => progress(page).textContent())
      .toBe("Resumed your session. 3 of 4 answered.");
    expect(await isFocused(answerField(page, "Capital of France?"))).toBe(true);

    // Completing with one left asks first; "Keep answering" goes back to it.
    const completes = calls("PracticeSessionService", "CompleteSession");
    const complete = page.getByRole("button", { name: "Complete session" });
    const dialog = page.getByRole("dialog", { name: "Complete the session?" });
    await complete.click();
    await expect.poll(() => dialog.isVisible()).toBe(true);
    expect(await dialog.locator("#confirm-text").textContent()).toBe(
      "1 question is not answered yet. It will count as not correct.",
    );
    expect(await axeViolations(page)).toEqual([]);
    await page.keyboard.press("Enter"); // the focus is on "Keep answering"
    await expect.poll(() => dialog.isVisible()).toBe(false);
    expect(await isFocused(answerField(page, "Capital of France?"))).toBe(true);
    // Escape says no too.
    await complete.click();
    await expect.poll(() => dialog.isVisible()).toBe(true);
    await page.keyboard.press("Escape");
    await expect.poll(() => dialog.isVisible()).toBe(false);
    expect(calls("PracticeSessionService", "CompleteSession")).toBe(completes);

    await complete.click();
    await dialog.getByRole("button", { name: "Complete anyway" }).click();
    await expect.poll(() => page.locator("#score").textContent()).toBe("75%");
    expect(calls("PracticeSessionService", "CompleteSession")).toBe(completes + 1);
    expect(await axeViolations(page)).toEqual([]);
    await page.close();
  });

  it("has no serious axe-core violation on a phone, and looks right there and on a desktop", async () => {
    await insertSessions(svc.db, completedSessions("mia", capitals, [1, 2, 2, 3, 4, 3]));
    const { page } = await openServed("mia", capitals);
    await page.getByRole("button", { name: "Start practice" }).click();
    await expect.poll(() => progress(page).textContent()).toMatch(/^Started/);
    await answer(page, "Capital of France?", "Paris");
    await answer(page, "Capital of Japan?", "Kyoto");
    await expect.poll(() => questionStates(page)).toEqual(["sent", "sent", "empty", "empty"]);
    // One answer kept on the device while the network is gone, and a draft.
    await setOffline(true);
    await answer(page, "Capital of Canada?", "Ottawa");
    await answerField(page, "Capital of Australia?").fill("Canb");
    await expect.poll(() => page.locator("#sync").textContent()).toMatch(/cannot be reached/);
    await waitForHistory(page, "All 7 sessions shown.");

    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: join(SHOTS, "practice-page.png"), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(SHOTS, "practice-page-phone.png"), fullPage: true });
    // Nothing wider than the phone's screen.
    expect(await page.locator("html").evaluate((html) => html.scrollWidth)).toBeLessThanOrEqual(
      390,
    );
    await setOffline(false);
    await expect.poll(() => questionStates(page)).toEqual(["sent", "sent", "sent", "draft"]);
    await page.setViewportSize({ width: 1000, height: 900 });
    await page.close();
  });
});
