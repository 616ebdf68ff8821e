import { join } from "node:path";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import {
  answer,
  capitals,
  inView,
  newPage,
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
  // Typed with spaces around it: sent, stored and shown without them.
  await answer(page, "Capital of France?", "  Paris  ");
  await answer(page, "Capital of Japan?", "Osaka");
  await answer(page, "Capital of Australia?", "Canberra");
  await expect.poll(() => questionStates(page)).toEqual(["sent", "sent", "empty", "sent"]);
  await page.getByRole("button", { name: "Complete session" }).click();
  const dialog = page.getByRole("dialog", { name: "Complete the session?" });
  await dialog.getByRole("button", { name: "Complete anyway" }).click();
  await expect.poll(() => page.locator("#score").textContent()).toBe("50%");
  expect(await page.locator("#review tr").first().locator("td").first().textContent()).toBe(
    "Paris",
  );
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

  // The first round's answer, as stored: trimmed.
  const sessions = (await (
    await svc.rest(user, "GET", `/quizzes/${capitals}/sessions?status=completed`)
  ).json()) as { sessions: { id: string; mode: string }[] };
  const first = sessions.sessions.find((x) => x.mode === "full");
  const round = (await (await svc.rest(user, "GET", `/sessions/${first?.id}`)).json()) as {
    answers: { user_answer: string }[];
  };
  expect(round.answers.map((a) => a.user_answer)).toContain("Paris");

  // The chart: the whole-quiz round a dot on the line, the missed practice a hollow square apart.
  const chart = page.locator("#chart svg");
  await expect.poll(() => chart.locator("rect.dot.practice").count()).toBe(1);
  expect(await chart.locator("circle.dot").count()).toBe(1);
  expect(await chart.getAttribute("aria-label")).toMatch(
    /1 completed session, 50% .*; and 1 review or practice of missed questions, drawn apart$/,
  );
  expect(await page.locator("#chart-caption").textContent()).toMatch(/hollow squares/);
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

describe("the offer stays while the latest round's misses are not practised", () => {
  it("after a reload, and on that round's review from the history; not on an older round's", async () => {
    const { page, consoleErrors } = await openServed("mika", capitals);
    await finishRound(page);
    const offers = page.getByRole("button", { name: "Practise the 2 you missed" });

    // A reload: no round open, so beside "Start practice" the offer.
    await page.reload();
    await expect
      .poll(() => page.getByRole("button", { name: "Start practice" }).isVisible())
      .toBe(true);
    await expect.poll(() => offers.count()).toBe(1);
    expect(
      await page
        .locator("#intro")
        .getByRole("button", { name: "Practise the 2 you missed" })
        .isVisible(),
    ).toBe(true);

    // The round from the history: its review offers it (and only it: one offer on the page).
    const row = page.locator("#history tr", { hasText: "50%" });
    await row.getByRole("button", { name: /^Review/ }).click();
    await expect.poll(() => page.locator("#result").isVisible()).toBe(true);
    await expect
      .poll(() =>
        page
          .locator("#result")
          .getByRole("button", { name: "Practise the 2 you missed" })
          .isVisible(),
      )
      .toBe(true);
    expect(await page.getByRole("button", { name: "Close the review" }).isVisible()).toBe(true);
    expect(await offers.count()).toBe(1);

    // Closed: the intro's offer is back; pressed, the missed round starts.
    await page.getByRole("button", { name: "Close the review" }).click();
    await expect
      .poll(() =>
        page
          .locator("#intro")
          .getByRole("button", { name: "Practise the 2 you missed" })
          .isVisible(),
      )
      .toBe(true);
    await offers.click();
    await expect
      .poll(() => progress(page).textContent())
      .toMatch(/^Started practising the questions you missed\./);
    expect(await page.locator("li.question label.prompt").allTextContents()).toEqual([
      "Capital of Japan?",
      "Capital of Canada?",
    ]);
    // A round is open now: reloaded, the page resumes it and offers nothing else.
    await page.reload();
    await expect
      .poll(() => progress(page).textContent())
      .toMatch(/^Resumed practising the questions you missed\./);
    expect(await offers.count()).toBe(0);

    // Completed with one still missed: the offer follows the latest round, not the older one.
    await answer(page, "Capital of Japan?", "Tokyo");
    await page.getByRole("button", { name: "Complete session" }).click();
    await page
      .getByRole("dialog", { name: "Complete the session?" })
      .getByRole("button", { name: "Complete anyway" })
      .click();
    await expect.poll(() => page.locator("#score").textContent()).toBe("50%");
    await page.reload();
    await expect
      .poll(() => page.getByRole("button", { name: "Practise the 1 you missed" }).isVisible())
      .toBe(true);
    const first = page.locator("#history tr", { hasText: "2 of 4" });
    await first.getByRole("button", { name: /^Review/ }).click();
    await expect.poll(() => page.locator("#result").isVisible()).toBe(true);
    expect(await page.locator("#missed-again").isHidden()).toBe(true);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });
});

const VIEWPORTS = [
  ["a desktop", { width: 1000, height: 900 }],
  ["a phone", { width: 390, height: 844 }],
] as const;

describe.each(VIEWPORTS)("the page's rough edges, on %s", (_name, viewport) => {
  it("a missing quiz is said once: no history, no extra error", async () => {
    const { page, consoleErrors } = await newPage();
    await page.setViewportSize(viewport);
    await page.goto(`${svc.baseUrl}/practice/?quiz=999999#token=${await svc.token("nomad")}`);
    await expect.poll(() => page.locator("#quiz-error").textContent()).toMatch(/^Quiz not found/);
    // Both history calls have answered (404) by the time the section is hidden.
    await expect.poll(() => page.locator("#history-section").isHidden()).toBe(true);
    expect(await page.getByText("Quiz not found", { exact: false }).count()).toBe(1);
    expect(await page.getByText("Could not load", { exact: false }).count()).toBe(0);
    expect(await inView(page.locator("#quiz-error"))).toBe(true);
    expect(consoleErrors.filter((e) => !/404/.test(e))).toEqual([]);
    await page.close();
  });

  it("without a token: the notice, and no empty card under it", async () => {
    const { page } = await newPage();
    await page.setViewportSize(viewport);
    await page.goto(`${svc.baseUrl}/practice/?quiz=${capitals}`);
    await expect.poll(() => page.locator("#notice").isVisible()).toBe(true);
    expect(await page.locator("#notice").textContent()).toMatch(/needs a sign-in token/);
    expect(await page.locator("#practice").isHidden()).toBe(true);
    expect(await page.getByText("Who is practising?").count()).toBe(0);
    await page.close();
  });
});
