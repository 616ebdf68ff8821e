import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { insertSessions } from "../support/fixtures.js";
import {
  answer,
  answerField,
  capitals,
  completedSessions,
  feedbackOf,
  inView,
  isFocused,
  newPage,
  OUTPUT,
  openServed,
  progress,
  questionStates,
  setOffline,
  svc,
  useBrowserHarness,
} from "./browser-harness.js";

/**
 * Review on the practice page in Chromium: a learner practises, time passes
 * (the memory rows moved back, as the API's data allows), the quiz list and
 * the quiz say what is due, a review practises exactly that, offline too;
 * and the page's rough edges found by trying it as a new user would.
 */
useBrowserHarness();

const MINUTE = 60_000;

/** As if the learner's answers had been given `ms` earlier: due_at and last_answered_at move back together. */
async function travelBack(user: string, ms: number) {
  const rows = await svc.db
    .selectFrom("practice_question_memory")
    .select(["question_id", "due_at", "last_answered_at"])
    .where("user_id", "=", user)
    .execute();
  for (const row of rows) {
    await svc.db
      .updateTable("practice_question_memory")
      .set({
        due_at: new Date(row.due_at.getTime() - ms),
        last_answered_at: new Date(row.last_answered_at.getTime() - ms),
      })
      .where("user_id", "=", user)
      .where("question_id", "=", row.question_id)
      .execute();
  }
}

async function due(user: string) {
  const res = await svc.rest(user, "GET", `/quizzes/${capitals}/review`);
  return (await res.json()) as {
    questions: { question_id: string; reps: number; last_correct: boolean }[];
    due_count: number;
  };
}

describe("reviewing what one missed", () => {
  afterEach(() => setOffline(false));

  it("practise, wait, and review exactly the questions missed, offline answers kept", async () => {
    const { page, consoleErrors, token } = await openServed("rita", capitals);
    await page.getByRole("button", { name: "Start practice" }).click();
    await expect.poll(() => progress(page).textContent()).toMatch(/^Started a new session\./);
    await answer(page, "Capital of France?", "Paris");
    await answer(page, "Capital of Japan?", "Osaka");
    await answer(page, "Capital of Canada?", "Toronto");
    await answer(page, "Capital of Australia?", "Canberra");
    await expect.poll(() => questionStates(page)).toEqual(["sent", "sent", "sent", "sent"]);
    await page.getByRole("button", { name: "Complete session" }).click();
    // After the completion: when the next review falls due (the missed ones, a minute on).
    const next = page.locator("#next-review");
    await expect.poll(() => next.textContent()).toMatch(/^Next review due .+\.$/);
    const dues = await svc.db
      .selectFrom("practice_question_memory")
      .select("due_at")
      .where("user_id", "=", "rita")
      .execute();
    const earliest = Math.min(...dues.map((d) => d.due_at.getTime()));
    expect(await next.locator("time").getAttribute("datetime")).toBe(
      new Date(earliest).toISOString(),
    );

    // Five minutes pass: the missed questions fell due after a minute, the
    // right ones fall due after ten (FSRS's learning steps).
    await travelBack("rita", 5 * MINUTE);
    await page.goto(`${svc.baseUrl}/practice/#token=${token}`);
    const item = page.locator(`li.quiz-item[data-quiz-id="${capitals}"]`);
    await expect.poll(() => item.textContent()).toContain("2 questions due for review");
    await page.screenshot({ path: join(OUTPUT, "20-quiz-list-due.png") });
    await item.getByRole("link").click();
    const review = page.getByRole("button", { name: "Review 2 due questions" });
    await expect.poll(() => review.isVisible()).toBe(true);
    expect(await page.getByRole("button", { name: "Start practice" }).isVisible()).toBe(true);
    await review.click();
    await expect
      .poll(() => progress(page).textContent())
      .toBe("Started a review of the questions due. 0 of 2 answered.");
    const prompts = await page.locator("li.question label").allTextContents();
    expect(prompts).toEqual(["Capital of Japan?", "Capital of Canada?"]);
    const sessionId = (await page.locator("#session").getAttribute("data-session-id")) ?? "";
    expect(await page.locator("#session").getAttribute("data-mode")).toBe("review");

    // Offline on the way: the answer waits on the device and goes out once.
    await setOffline(true);
    await answer(page, "Capital of Japan?", "Tokyo");
    await expect.poll(() => questionStates(page)).toEqual(["saved", "empty"]);
    await setOffline(false);
    await expect.poll(() => questionStates(page)).toEqual(["sent", "empty"]);
    await answer(page, "Capital of Canada?", "Ottawa");
    await expect.poll(() => feedbackOf(page, "Capital of Canada?").textContent()).toBe("✓ Correct");
    await page.getByRole("button", { name: "Complete session" }).click();
    await expect.poll(() => page.locator("#score").textContent()).toBe("100%");
    expect(await page.locator("#result-heading").textContent()).toBe("Review session complete");
    await expect
      .poll(() => page.locator("#history tr").first().locator("td").nth(2).textContent())
      .toBe("2 of 2 correct · review");
    await page.screenshot({ path: join(OUTPUT, "21-review-complete.png"), fullPage: true });

    const stored = await svc.rest("rita", "GET", `/sessions/${sessionId}`);
    expect(await stored.json()).toMatchObject({
      mode: "review",
      total_questions: 2,
      correct_answers: 2,
    });
    // Their memory moved as ts-fsrs says: right after wrong, due again later; nothing due now.
    const after = await due("rita");
    expect(after.due_count).toBe(0);
    const memory = await svc.db
      .selectFrom("practice_question_memory")
      .select(["reps", "last_correct"])
      .where("user_id", "=", "rita")
      .orderBy("question_id")
      .execute();
    expect(memory.map((m) => [m.reps, Number(m.last_correct)])).toEqual([
      [1, 1],
      [2, 1],
      [2, 1],
      [1, 1],
    ]);
    expect(consoleErrors.filter((e) => !/ERR_INTERNET_DISCONNECTED/.test(e))).toEqual([]);
    await page.close();
  });

  it("on a phone, a refused answer to the last question stays in view, its field focused", async () => {
    const { page } = await openServed("ruth", capitals);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByRole("button", { name: "Start practice" }).click();
    await expect.poll(() => progress(page).textContent()).toMatch(/^Started a new session\./);
    const sessionId = (await page.locator("#session").getAttribute("data-session-id")) ?? "";
    await answer(page, "Capital of Japan?", "Tokyo");
    await answer(page, "Capital of Canada?", "Ottawa");
    await expect.poll(() => questionStates(page)).toEqual(["empty", "sent", "sent", "empty"]);

    // The last question: answered on another device meanwhile.
    await setOffline(true);
    await answer(page, "Capital of Australia?", "Canberra");
    const australia = await page.locator("li.question").last().getAttribute("data-question-id");
    const other = await svc.rest("ruth", "POST", `/sessions/${sessionId}/answers`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question_id: australia, user_answer: "Sydney" }),
    });
    expect(other.status).toBe(201);
    // The focus moved on to the first question left, at the top.
    expect(await isFocused(answerField(page, "Capital of France?"))).toBe(true);
    await setOffline(false);

    const feedback = feedbackOf(page, "Capital of Australia?");
    await expect
      .poll(() => feedback.textContent())
      .toMatch(/Your answer “Canberra” was not stored/);
    await expect.poll(() => inView(feedback)).toBe(true);
    // Focused, the field is read out with its description: the refusal.
    const field = answerField(page, "Capital of Australia?");
    expect(await isFocused(field)).toBe(true);
    expect(await field.getAttribute("aria-describedby")).toBe(await feedback.getAttribute("id"));
    await page.screenshot({ path: join(OUTPUT, "22-refused-last-phone.png") });
    await page.setViewportSize({ width: 1000, height: 900 });
    await page.close();
  });

  it("closing an older session's review after a completion leaves a way to practise again", async () => {
    await insertSessions(svc.db, completedSessions("rosa", capitals, [2]));
    const { page } = await openServed("rosa", capitals);
    await page.getByRole("button", { name: "Start practice" }).click();
    await expect.poll(() => progress(page).textContent()).toMatch(/^Started a new session\./);
    await answer(page, "Capital of France?", "Paris");
    await expect.poll(() => questionStates(page)).toEqual(["sent", "empty", "empty", "empty"]);
    await page.getByRole("button", { name: "Complete session" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Complete anyway" }).click();
    await expect.poll(() => page.locator("#result-heading").textContent()).toBe("Session complete");

    const older = page.getByRole("button", { name: /^Review the session started / }).last();
    await older.click();
    await expect
      .poll(() => page.locator("#result-heading").textContent())
      .toMatch(/^Review of your session of /);
    await page.getByRole("button", { name: "Close the review" }).click();
    const start = page.getByRole("button", { name: "Start practice" });
    await expect.poll(() => start.isVisible()).toBe(true);
    // The missed questions are due in a minute: the quiz says when.
    await expect
      .poll(() => page.locator("#review-note").textContent())
      .toMatch(/^Next review due /);
    await start.click();
    await expect.poll(() => progress(page).textContent()).toMatch(/^Started a new session\./);
    await page.close();
  });

  it("GET / leads to the practice page, which says plainly how to open it without a token", async () => {
    const { page, consoleErrors } = await newPage();
    await page.goto(`${svc.baseUrl}/`);
    await page.getByRole("link", { name: "/practice/" }).click();
    const notice = page.locator("#notice");
    await expect.poll(() => notice.isVisible()).toBe(true);
    const text = (await notice.textContent()) ?? "";
    expect(text).not.toMatch(/`/);
    expect(text).toMatch(/#token=/);
    expect(text).toMatch(/npm run -s token -- alice/);
    const home = await (await fetch(`${svc.baseUrl}/`)).text();
    expect(home).toMatch(/#token=/);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });
});
