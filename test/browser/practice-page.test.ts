import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { insertDemoContent } from "../../src/db/demo-content.js";
import { loadPracticePage } from "../../src/web/practice-page.js";
import { insertSessions, type SessionRow } from "../support/fixtures.js";
import { startTestService, TEST_SECRET, type TestService } from "../support/service.js";
import { type StaticServer, serveStatic } from "./static-server.js";

/**
 * The practice page (examples/web), built with Vite, in Debian's Chromium
 * against the real service: served by the service itself (same origin, the
 * token in the URL fragment), and as a static build on two other origins,
 * one in CORS_ORIGINS and one not.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const OUTPUT = resolve("test-results/browser");
const DAY = 86_400_000;

/** One line of the service's request log. */
interface LogLine {
  msg?: string;
  transport?: string;
  procedure?: string;
  status?: number;
}

let workDir: string;
let page1: StaticServer; // an origin in CORS_ORIGINS
let page2: StaticServer; // the same page on an origin that is not
let svc: TestService;
/** The demo quizzes: "Capitals" (4 questions) and "Arithmetic" (3). */
let capitals: string;
let arithmetic: string;
let context: BrowserContext;
const log: LogLine[] = [];
const rawLog: string[] = [];

const requests = (filter: (line: LogLine) => boolean) =>
  log.filter((l) => l.msg === "request" && filter(l)).length;
// A CORS preflight is logged with transport "preflight", apart from the calls.
const preflights = () => requests((l) => l.transport === "preflight");
const calls = (service: string, method: string) =>
  requests(
    (l) => l.procedure === `/practice.v1.${service}/${method}` && l.transport !== "preflight",
  );

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), "practice-web-"));
  await mkdir(OUTPUT, { recursive: true });

  // The page as a team would ship it: `vite build` output, nothing else.
  const dist = join(workDir, "dist");
  await build({
    configFile: resolve("examples/web/vite.config.ts"),
    mode: "production",
    logLevel: "warn",
    build: { outDir: dist, emptyOutDir: true },
  });
  page1 = await serveStatic(dist);
  page2 = await serveStatic(dist);

  // CORS_ORIGINS as a deployment sets it, read by the service's own config.
  const config = loadConfig({
    CORS_ORIGINS: page1.origin,
    JWT_SECRET: TEST_SECRET,
    DATABASE_URL: "sqlite::memory:",
  });
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n")) {
        if (!line) continue;
        rawLog.push(line);
        log.push(JSON.parse(line));
      }
      done();
    },
  });
  svc = await startTestService({
    corsOrigins: config.corsOrigins,
    logger: pino(sink),
    practicePage: await loadPracticePage(dist),
  });
  [capitals = "", arithmetic = ""] = (await insertDemoContent(svc.db)).quizIds;

  context = await chromium.launchPersistentContext(join(workDir, "profile"), {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
    viewport: { width: 1000, height: 900 },
    locale: "en-US",
    timezoneId: "UTC",
  });
});

afterAll(async () => {
  await context?.close();
  await svc?.close();
  await page1?.close();
  await page2?.close();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** A new tab that records console errors and uncaught exceptions. */
async function newPage(): Promise<{ page: Page; consoleErrors: string[] }> {
  const page = await context.newPage();
  const consoleErrors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  page.on("pageerror", (err) => consoleErrors.push(String(err)));
  return { page, consoleErrors };
}

/** The page as the service serves it, as `npm start` prints its URL. */
async function openServed(user: string, quizId: string) {
  const opened = await newPage();
  const token = await svc.token(user);
  await opened.page.goto(`${svc.baseUrl}/practice/?quiz=${quizId}#token=${token}`);
  return { ...opened, token };
}

/** The static build on another origin, told where the service is. */
async function openElsewhere(
  origin: string,
  user: string,
  quizId: string,
  extra: Record<string, string> = {},
) {
  const opened = await newPage();
  const query = new URLSearchParams({ service: svc.baseUrl, quiz: quizId, ...extra });
  await opened.page.goto(`${origin}/?${query}#token=${await svc.token(user)}`);
  return opened;
}

/** Whether `target` has the focus (`el.ownerDocument`: no DOM types in the tests). */
const isFocused = (target: Locator) =>
  target.evaluate((el) => el === el.ownerDocument.activeElement);

/** Presses Tab until `target` has the focus: it is reachable with the keyboard. */
async function tabTo(page: Page, target: Locator) {
  for (let i = 0; i < 40; i++) {
    if (await isFocused(target)) return;
    await page.keyboard.press("Tab");
  }
  throw new Error(`Tab never reached ${target}`);
}

const progress = (page: Page) => page.locator("#progress");
const historyStatus = (page: Page) => page.locator("#history-status");
const loadMore = (page: Page) => page.getByRole("button", { name: "Load more" });
const answerField = (page: Page, prompt: string) => page.getByRole("textbox", { name: prompt });
const feedbackOf = (page: Page, prompt: string) =>
  page.locator("li.question", { has: answerField(page, prompt) }).locator(".feedback");

/** The history table as the user sees it: id, started_at and the two result columns. */
async function historyRows(page: Page) {
  return page.locator("#history tr").evaluateAll((rows) =>
    rows.map((row) => ({
      id: row.getAttribute("data-session-id") ?? "",
      startedAt: row.querySelector("time")?.getAttribute("datetime") ?? "",
      result: row.querySelectorAll("td")[1]?.textContent ?? "",
      answers: row.querySelectorAll("td")[2]?.textContent ?? "",
    })),
  );
}

async function waitForHistory(page: Page, text: string) {
  await expect.poll(() => historyStatus(page).textContent()).toBe(text);
}

let nextId = 0x2000;

/** Completed sessions of `user` on `quizId`, one a day, ending yesterday. */
function completedSessions(user: string, quizId: string, corrects: number[]): SessionRow[] {
  const now = svc.clock.now().getTime();
  return corrects.map((correct, i) => {
    const startedAt = new Date(now - (corrects.length - i) * DAY);
    return {
      id: `019a0000-0000-7000-8000-${(nextId++).toString(16).padStart(12, "0")}`,
      userId: user,
      quizId,
      startedAt,
      completedAt: new Date(startedAt.getTime() + 5 * 60_000),
      totalQuestions: 4,
      correctAnswers: correct,
    };
  });
}

describe("the practice page in Chromium", () => {
  it("a person practises a quiz start to finish with the keyboard, reloading mid-way", async () => {
    // Five earlier sessions, for the chart: 25%, 50%, 50%, 75%, 100%.
    await insertSessions(svc.db, completedSessions("dana", capitals, [1, 2, 2, 3, 4]));
    const { page, consoleErrors, token } = await openServed("dana", capitals);

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
    expect(rows[0]).toMatchObject({ id: sessionId, result: "75%", answers: "3 of 4 correct" });
    expect(rows.map((r) => r.result)).toEqual(["75%", "100%", "75%", "50%", "50%", "25%"]);
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
          result: inProgress ? "in progress" : `${Math.round((correct / total) * 100)}%`,
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
      // GetQuiz, ListSessions (active, history, chart) and StartSession (resume).
      await expect.poll(() => requests((l) => l.transport === "grpc-web")).toBe(before + 5);
      expect(consoleErrors).toEqual([]);
      await page.close();
    });
  });

  it("fails in the browser when the page's origin is not in CORS_ORIGINS", async () => {
    const listsBefore = calls("PracticeSessionService", "ListSessions");
    const preflightsBefore = preflights();
    const { page } = await openElsewhere(page2.origin, "bob", capitals);
    await waitForHistory(page, "Could not load the history.");
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("CORS_ORIGINS");
    // The preflights reached the service; the browser then refused to send the calls.
    await expect.poll(() => preflights()).toBeGreaterThan(preflightsBefore);
    expect(calls("PracticeSessionService", "ListSessions")).toBe(listsBefore);
    await page.screenshot({ path: join(OUTPUT, "7-cors-refused.png") });
    await page.close();
  });
});
