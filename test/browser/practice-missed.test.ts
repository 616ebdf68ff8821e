import { join } from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import {
  answer,
  capitals,
  inView,
  OUTPUT,
  openServed,
  progress,
  questionStates,
  svc,
  useBrowserHarness,
} from "./browser-harness.js";

/**
 * "Practise the N you missed" in Chromium: from a finished round, one click
 * starts a session of exactly the questions answered wrongly or left
 * unanswered, on a desktop and on a phone.
 */
useBrowserHarness();

/** The round: France right, Japan wrong, Canada left unanswered, Australia right. */
async function finishRound(page: Page) {
  await page.getByRole("button", { name: "Start practice" }).click();
  await expect.poll(() => progress(page).textContent()).toMatch(/^Started a new session\./);
  await answer(page, "Capital of France?", "Paris");
  await answer(page, "Capital of Japan?", "Osaka");
  await answer(page, "Capital of Australia?", "Canberra");
  await expect.poll(() => questionStates(page)).toEqual(["sent", "sent", "empty", "sent"]);
  await page.getByRole("button", { name: "Complete session" }).click();
  const dialog = page.getByRole("dialog", { name: "Complete the session?" });
  await dialog.getByRole("button", { name: "Complete anyway" }).click();
  await expect.poll(() => page.locator("#score").textContent()).toBe("50%");
}

async function practiseMissed(user: string, page: Page, shot: string) {
  const offer = page.getByRole("button", { name: "Practise the 2 you missed" });
  await expect.poll(() => offer.isVisible()).toBe(true);
  await expect.poll(() => inView(offer)).toBe(true);
  await page.screenshot({ path: join(OUTPUT, shot) });
  await offer.click();
  await expect
    .poll(() => progress(page).textContent())
    .toMatch(/^Started practising the questions you missed\./);
  expect(await page.locator("#session").getAttribute("data-mode")).toBe("missed");
  // Exactly the wrong and the unanswered one, in the quiz's order.
  expect(await page.locator("li.question label.prompt").allTextContents()).toEqual([
    "Capital of Japan?",
    "Capital of Canada?",
  ]);
  await expect.poll(() => questionStates(page)).toEqual(["empty", "empty"]);
  const sessionId = (await page.locator("#session").getAttribute("data-session-id")) ?? "";
  const stored = (await (await svc.rest(user, "GET", `/sessions/${sessionId}`)).json()) as {
    mode: string;
    questions: { question_id: string }[];
  };
  const { questions: quiz } = (await (
    await svc.rest(user, "GET", `/quizzes/${capitals}`)
  ).json()) as { questions: { id: string; prompt: string }[] };
  const prompts = new Map(quiz.map((q) => [q.id, q.prompt]));
  expect(stored.mode).toBe("missed");
  expect(stored.questions.map((q) => prompts.get(q.question_id))).toEqual([
    "Capital of Japan?",
    "Capital of Canada?",
  ]);

  await answer(page, "Capital of Japan?", "Tokyo");
  await answer(page, "Capital of Canada?", "Ottawa");
  await expect.poll(() => questionStates(page)).toEqual(["sent", "sent"]);
  await page.getByRole("button", { name: "Complete session" }).click();
  await expect.poll(() => page.locator("#score").textContent()).toBe("100%");
  expect(await page.locator("#result-heading").textContent()).toBe("Missed questions practised");
  // Nothing missed this time: no offer.
  expect(await page.locator("#missed-again").isHidden()).toBe(true);
}

describe("practising what one missed, in one click", () => {
  it("on a desktop", async () => {
    const { page, consoleErrors } = await openServed("mina", capitals);
    await finishRound(page);
    await practiseMissed("mina", page, "missed-offer-desktop.png");
    expect(consoleErrors).toEqual([]);
  });

  it("on a phone", async () => {
    const { page, consoleErrors } = await openServed("milo", capitals);
    await page.setViewportSize({ width: 390, height: 844 });
    await finishRound(page);
    await practiseMissed("milo", page, "missed-offer-phone.png");
    expect(consoleErrors).toEqual([]);
    await page.setViewportSize({ width: 1000, height: 900 });
  });
});
