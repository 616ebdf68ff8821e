import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import {
  answer,
  answerField,
  arithmetic,
  calls,
  capitals,
  eventCounts,
  feedbackOf,
  inView,
  newPage,
  OUTPUT,
  openServed,
  progress,
  questionStates,
  setOffline,
  storedSession,
  svc,
  useBrowserHarness,
} from "./browser-harness.js";

/**
 * Answers are never lost: the practice page in Chromium keeps each answer
 * on the device until the service has it, through a network cut, a reload,
 * a completion asked for offline and a token that expires. Each test then
 * reads the session through the REST API: every answer typed is stored
 * exactly once, and written as one event.
 */
useBrowserHarness();

/** Types an answer into the question's field and presses Enter. */

async function startPractice(page: Page) {
  await page.getByRole("button", { name: "Start practice" }).click();
  await expect.poll(() => progress(page).textContent()).toMatch(/^Started a new session\./);
  return (await page.locator("#session").getAttribute("data-session-id")) ?? "";
}

/** The answers the service holds for the session, as [question prompt's answer] by question id. */
async function storedAnswers(user: string, sessionId: string) {
  const session = await storedSession(user, sessionId);
  return session.answers.map((a) => a.user_answer);
}

describe("the practice page keeps every answer until the service has it", () => {
  // A test that fails while offline must not leave the shared browser context offline.
  afterEach(() => setOffline(false));

  it("offline: answers wait on the device and go out, once, when the network is back", async () => {
    const { page, consoleErrors } = await openServed("olga", capitals);
    const sessionId = await startPractice(page);
    await answer(page, "Capital of France?", "Paris");
    await expect.poll(() => feedbackOf(page, "Capital of France?").textContent()).toBe("✓ Correct");

    await setOffline(true);
    await answer(page, "Capital of Japan?", "Tokyo");
    await answer(page, "Capital of Canada?", "Toronto");
    await expect.poll(() => questionStates(page)).toEqual(["sent", "saved", "saved", "empty"]);
    expect(await feedbackOf(page, "Capital of Japan?").textContent()).toBe(
      "Saved on this device · not sent yet",
    );
    expect(await progress(page).textContent()).toBe(
      "3 of 4 answered. 2 saved on this device, not sent yet.",
    );
    await expect.poll(() => page.locator("#sync").textContent()).toMatch(/cannot be reached/);
    // A draft typed offline stays in its field.
    await answerField(page, "Capital of Australia?").fill("Canb");
    await page.screenshot({ path: join(OUTPUT, "8-offline.png"), fullPage: true });

    await setOffline(false);
    await expect.poll(() => questionStates(page)).toEqual(["sent", "sent", "sent", "draft"]);
    expect(await feedbackOf(page, "Capital of Canada?").textContent()).toBe("✗ Not correct");
    expect(await answerField(page, "Capital of Australia?").inputValue()).toBe("Canb");
    await expect.poll(() => page.locator("#sync").textContent()).toBe("");
    expect(await progress(page).textContent()).toBe("3 of 4 answered.");

    expect(await storedAnswers("olga", sessionId)).toEqual(["Paris", "Tokyo", "Toronto"]);
    expect(await eventCounts(sessionId)).toEqual({
      "practice.session.started": 1,
      "practice.answer.submitted": 3,
    });
    // Chromium logs each call the network refused; nothing else went wrong.
    expect(consoleErrors.filter((e) => !/ERR_INTERNET_DISCONNECTED/.test(e))).toEqual([]);
    await page.close();
  });

  it("a reload with answers still queued sends them, in order, and keeps the draft", async () => {
    const { page } = await openServed("rita", arithmetic);
    const sessionId = await startPractice(page);
    // The answers cannot leave this tab (the service is out of reach)...
    await page.route("**/SubmitAnswer", (route) => route.abort("internetdisconnected"));
    await answer(page, "12 + 30?", "42");
    await answer(page, "7 * 8?", "54");
    await expect.poll(() => questionStates(page)).toEqual(["saved", "saved", "empty"]);
    await answerField(page, "81 / 9?").fill("9");
    const submitsBefore = calls("PracticeSessionService", "SubmitAnswer");

    // ...and the tab reloads before they could: they go out from the new page.
    await page.unroute("**/SubmitAnswer");
    await page.reload();
    await expect.poll(() => questionStates(page)).toEqual(["sent", "sent", "draft"]);
    expect(await answerField(page, "81 / 9?").inputValue()).toBe("9");
    // Focus lands on the first question still to answer.
    await expect
      .poll(() =>
        answerField(page, "81 / 9?").evaluate((el) => el === el.ownerDocument.activeElement),
      )
      .toBe(true);
    expect(calls("PracticeSessionService", "SubmitAnswer")).toBe(submitsBefore + 2);

    // In the order they were given.
    expect(await storedAnswers("rita", sessionId)).toEqual(["42", "54"]);
    expect((await eventCounts(sessionId))["practice.answer.submitted"]).toBe(2);
    await page.close();
  });

  it("completing offline waits for the answers, then completes once", async () => {
    const { page } = await openServed("sami", arithmetic);
    const sessionId = await startPractice(page);
    await answer(page, "7 * 8?", "56");
    await expect.poll(() => questionStates(page)).toEqual(["sent", "empty", "empty"]);

    // On a phone, with the network gone.
    await page.setViewportSize({ width: 390, height: 844 });
    await setOffline(true);
    await answer(page, "12 + 30?", "42");
    await page.getByRole("button", { name: "Complete session" }).click();
    // One question is left: the page asks first.
    const dialog = page.getByRole("dialog", { name: "Complete the session?" });
    await expect.poll(() => dialog.isVisible()).toBe(true);
    expect(await dialog.textContent()).toContain(
      "1 question is not answered yet. It will count as not correct.",
    );
    await dialog.getByRole("button", { name: "Complete anyway" }).click();
    const status = page.locator("#complete-status");
    await expect
      .poll(() => status.textContent())
      .toBe(
        "Completion saved on this device: the session is completed as soon as your answers are sent.",
      );
    expect(await page.getByRole("button", { name: "Complete session" }).isDisabled()).toBe(true);
    // The message is beside the button, in the phone's view: no scrolling needed to read it.
    // Closing the dialog returns focus to the button, which scrolls it (and the message) into view.
    await expect.poll(() => inView(status)).toBe(true);
    await page.screenshot({ path: join(OUTPUT, "9-complete-offline-phone.png") });
    await page.setViewportSize({ width: 1000, height: 900 });

    await setOffline(false);
    await expect.poll(() => page.locator("#score").textContent()).toBe("67%");
    expect(await page.locator("#score-band").textContent()).toBe("fair");

    const stored = await storedSession("sami", sessionId);
    expect(stored.completed_at).not.toBeNull();
    expect(stored.answers.map((a) => a.user_answer)).toEqual(["56", "42"]);
    expect(await eventCounts(sessionId)).toEqual({
      "practice.session.started": 1,
      "practice.answer.submitted": 2,
      "practice.session.completed": 1,
    });
    await page.close();
  });

  it("an answer whose reply was lost is sent again, harmlessly: stored once", async () => {
    const { page } = await openServed("uma", capitals);
    const sessionId = await startPractice(page);
    // The first try of each answer and of the completion reaches the
    // service, which stores it; its reply never reaches the page.
    const lost = new Set<string>();
    await page.route(/\/(SubmitAnswer|CompleteSession)$/, async (route) => {
      const key = `${route.request().url()} ${route.request().postData()}`;
      if (lost.has(key)) return route.continue();
      lost.add(key);
      await route.fetch();
      await route.abort("connectionreset");
    });
    await answer(page, "Capital of France?", "Paris");
    await answer(page, "Capital of Japan?", "Tokyo");
    await expect
      .poll(() => questionStates(page), { timeout: 15_000 })
      .toEqual(["sent", "sent", "empty", "empty"]);
    await page.getByRole("button", { name: "Complete session" }).click();
    await page.getByRole("button", { name: "Complete anyway" }).click();
    await expect.poll(() => page.locator("#score").textContent(), { timeout: 15_000 }).toBe("50%");

    // Three calls lost their replies and were sent again.
    expect(lost.size).toBe(3);
    const stored = await storedSession("uma", sessionId);
    expect(stored.answers.map((a) => a.user_answer)).toEqual(["Paris", "Tokyo"]);
    expect(await eventCounts(sessionId)).toEqual({
      "practice.session.started": 1,
      "practice.answer.submitted": 2,
      "practice.session.completed": 1,
    });
    await page.close();
  });

  it("an answer given elsewhere first: the page shows the stored one, and why its own was refused", async () => {
    const { page } = await openServed("vera", capitals);
    const sessionId = await startPractice(page);
    await setOffline(true);
    await answer(page, "Capital of France?", "Paris");
    // Meanwhile, on another device, the same question gets another answer.
    const france = await page.locator("li.question").first().getAttribute("data-question-id");
    const other = await svc.rest("vera", "POST", `/sessions/${sessionId}/answers`, {
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ question_id: france, user_answer: "Lyon" }),
    });
    expect(other.status).toBe(201);
    await setOffline(false);

    await expect.poll(() => questionStates(page)).toEqual(["refused", "empty", "empty", "empty"]);
    expect(await answerField(page, "Capital of France?").inputValue()).toBe("Lyon");
    expect(await feedbackOf(page, "Capital of France?").textContent()).toBe(
      "✗ Not correct · Your answer “Paris” was not stored. This question was answered " +
        "already, elsewhere, with “Lyon”: the service keeps the first answer.",
    );
    expect(await progress(page).textContent()).toBe("1 of 4 answered.");
    expect(await storedAnswers("vera", sessionId)).toEqual(["Lyon"]);
    await page.close();
  });

  it("an expired token says so once, keeps the queue, and the next token sends it", async () => {
    const { page } = await openServed("tess", capitals);
    const sessionId = await startPractice(page);
    await answer(page, "Capital of France?", "Paris");
    await expect.poll(() => questionStates(page)).toEqual(["sent", "empty", "empty", "empty"]);

    // The token's day is over (the service's clock moves on; the session has 7 days).
    svc.clock.advance(2 * 86_400_000);
    await answer(page, "Capital of Japan?", "Tokyo");
    const notice = page.locator("#notice");
    await expect.poll(() => notice.isVisible()).toBe(true);
    // Other parts of the page fail the same way; the page still says it once.
    await page.getByLabel("Show").selectOption({ label: "Completed" });
    await expect
      .poll(() => page.locator("#history-status").textContent())
      .toBe("Could not load the history.");
    const body = (await page.locator("body").textContent()) ?? "";
    expect(body.split("Your sign-in has expired").length - 1).toBe(1);
    expect(await notice.textContent()).toMatch(
      /^Your sign-in has expired or is not valid\. Answers you gave are kept on this device/,
    );
    expect(await questionStates(page)).toEqual(["sent", "saved", "empty", "empty"]);
    await page.screenshot({ path: join(OUTPUT, "10-token-expired.png") });
    await page.close();

    // The tab is closed; the learner opens the page again with a new token.
    const again = await newPage();
    await again.page.goto(
      `${svc.baseUrl}/practice/?quiz=${capitals}#token=${await svc.token("tess")}`,
    );
    await expect.poll(() => questionStates(again.page)).toEqual(["sent", "sent", "empty", "empty"]);
    expect(await again.page.locator("#notice").isVisible()).toBe(false);
    expect(await storedAnswers("tess", sessionId)).toEqual(["Paris", "Tokyo"]);
    expect((await eventCounts(sessionId))["practice.answer.submitted"]).toBe(2);
    await again.page.close();
  });
});
