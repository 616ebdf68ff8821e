import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import {
  insertAnswer,
  insertQuiz,
  insertSessions,
  type QuizFixture,
  type SessionRow,
} from "../support/fixtures.js";
import { startTestService, TEST_SECRET, type TestService } from "../support/service.js";
import { type StaticServer, serveStatic } from "./static-server.js";

/**
 * The example page (examples/web), built with Vite and served on one origin,
 * calling the real service on another, in Debian's Chromium.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const OUTPUT = resolve("test-results/browser");

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
let quiz: QuizFixture;
let context: BrowserContext;
const log: LogLine[] = [];

const requests = (filter: (line: LogLine) => boolean) =>
  log.filter((l) => l.msg === "request" && filter(l)).length;
const rpc = (method: string) => `/practice.v1.PracticeSessionService/${method}`;
// A CORS preflight is logged with transport "preflight", apart from the calls.
const preflights = () => requests((l) => l.transport === "preflight");
const calls = (method: string) =>
  requests((l) => l.procedure === rpc(method) && l.transport !== "preflight");

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
      for (const line of String(chunk).split("\n")) if (line) log.push(JSON.parse(line));
      done();
    },
  });
  svc = await startTestService({ corsOrigins: config.corsOrigins, logger: pino(sink) });
  quiz = await insertQuiz(svc.db, { questions: 4 });

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
    viewport: { width: 900, height: 900 },
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

async function openPage(
  origin: string,
  user: string,
  extra: Record<string, string> = {},
): Promise<Page> {
  const query = new URLSearchParams({
    service: svc.baseUrl,
    token: await svc.token(user),
    quiz: quiz.quizId,
    ...extra,
  });
  const page = await context.newPage();
  await page.goto(`${origin}/?${query}`);
  return page;
}

const historyStatus = (page: Page) => page.locator("#history-status");
const startResult = (page: Page) => page.locator("#start-result");
const loadMore = (page: Page) => page.getByRole("button", { name: "Load more" });

/** The history table as the user sees it: id, started_at and the result column. */
async function historyRows(page: Page) {
  return page.locator("#history tr").evaluateAll((rows) =>
    rows.map((row) => ({
      id: row.getAttribute("data-session-id") ?? "",
      startedAt: row.querySelector("time")?.getAttribute("datetime") ?? "",
      result: row.querySelectorAll("td")[1]?.textContent ?? "",
      correct: row.querySelectorAll("td")[2]?.textContent ?? "",
    })),
  );
}

/** Waits until the history says it has `shown` rows (after a load). */
async function waitForHistory(page: Page, text: string) {
  await expect.poll(() => historyStatus(page).textContent()).toBe(text);
}

describe("the example page in Chromium, on another origin than the service", () => {
  it("starts a session, then resumes the same one with its answers", async () => {
    const page = await openPage(page1.origin, "bob");
    await waitForHistory(page, "No sessions.");
    const preflightsBefore = preflights();

    await page.getByRole("button", { name: "Start or resume" }).click();
    await expect.poll(() => startResult(page).getAttribute("data-created")).toBe("true");
    const sessionId = await startResult(page).getAttribute("data-session-id");
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await startResult(page).textContent()).toBe(
      `Created a new session ${sessionId}: 0 of 4 questions answered, 0 correct.`,
    );
    // The new session shows up at the top of the history, in progress.
    await waitForHistory(page, "1 session shown.");
    expect(await historyRows(page)).toMatchObject([
      { id: sessionId, result: "in progress", correct: "0 / 4" },
    ]);

    // Another device answers one question meanwhile.
    await svc.connect.submitAnswer(
      { sessionId: sessionId ?? "", questionId: quiz.questionIds[0], userAnswer: "A1" },
      { headers: await svc.auth("bob") },
    );

    await page.getByRole("button", { name: "Start or resume" }).click();
    await expect.poll(() => startResult(page).getAttribute("data-created")).toBe("false");
    expect(await startResult(page).getAttribute("data-session-id")).toBe(sessionId);
    expect(await startResult(page).textContent()).toBe(
      `Resumed your session ${sessionId}: 1 of 4 questions answered, 1 correct.`,
    );
    expect(await page.getByRole("list", { name: "Answers so far" }).textContent()).toBe(
      `“A1” to question ${quiz.questionIds[0]} (correct)`,
    );

    // Real cross-origin calls: the browser asked first (a preflight, for the
    // authorization header), then sent Connect's POSTs.
    await expect.poll(() => calls("StartSession")).toBe(2);
    expect(preflights()).toBeGreaterThan(preflightsBefore);
    await page.close();
  });

  describe("the history of 45 sessions (44 completed, 1 in progress)", () => {
    const USER = "alice";
    /** Newest first, as the page must show them. */
    let expected: { id: string; startedAt: string; result: string; correct: string }[];

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
        const correct = inProgress ? 2 : (i * 7) % (total + 1);
        rows.push({
          id,
          userId: USER,
          quizId: quiz.quizId,
          startedAt,
          completedAt: inProgress ? null : new Date(startedAt.getTime() + 600_000),
          totalQuestions: total,
          correctAnswers: correct,
        });
        expected.push({
          id,
          startedAt: startedAt.toISOString(),
          result: inProgress ? "in progress" : `${Math.round((correct / total) * 100)}%`,
          correct: `${correct} / ${total}`,
        });
      }
      // Rows go in shuffled, so the order on the page is the service's doing.
      await insertSessions(
        svc.db,
        [...rows].sort((a, b) => (a.id.slice(-3) < b.id.slice(-3) ? -1 : 1)).reverse(),
      );
      for (const [n, answer] of ["A1", "wrong"].entries()) {
        await insertAnswer(svc.db, {
          sessionId: expected[0]?.id ?? "",
          questionId: quiz.questionIds[n] ?? "",
          userAnswer: answer,
          isCorrect: answer === "A1",
          answeredAt: new Date(base + n * 60_000),
        });
      }
    });

    it("pages through all, completed and in-progress sessions with load more", async () => {
      const page = await openPage(page1.origin, USER);
      const completed = expected.filter((s) => s.result !== "in progress");
      expect(completed).toHaveLength(44);

      // All: 20 + 20 + 5, newest first, scores for completed sessions.
      await waitForHistory(page, "Showing the newest 20 sessions.");
      expect(await historyRows(page)).toEqual(expected.slice(0, 20));
      expect((await historyRows(page))[0]?.result).toBe("in progress");
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
      expect(await loadMore(page).isVisible()).toBe(false);

      // Back to all: the first page again.
      await page.getByLabel("Show").selectOption({ label: "All sessions" });
      await waitForHistory(page, "Showing the newest 20 sessions.");
      expect(await historyRows(page)).toEqual(expected.slice(0, 20));

      // Start resumes the seeded in-progress session and shows its two answers.
      await page.getByRole("button", { name: "Start or resume" }).click();
      await expect.poll(() => startResult(page).getAttribute("data-created")).toBe("false");
      expect(await startResult(page).getAttribute("data-session-id")).toBe(expected[0]?.id);
      expect(
        await page
          .getByRole("list", { name: "Answers so far" })
          .getByRole("listitem")
          .allTextContents(),
      ).toEqual([
        `“A1” to question ${quiz.questionIds[0]} (correct)`,
        `“wrong” to question ${quiz.questionIds[1]} (incorrect)`,
      ]);

      await page.screenshot({ path: join(OUTPUT, "practice-page.png"), fullPage: true });
      await page.close();
    });

    it("works over gRPC-Web too", async () => {
      const before = requests((l) => l.transport === "grpc-web");
      const page = await openPage(page1.origin, USER, { protocol: "grpc-web" });
      await waitForHistory(page, "Showing the newest 20 sessions.");
      expect(await historyRows(page)).toEqual(expected.slice(0, 20));
      await expect.poll(() => requests((l) => l.transport === "grpc-web")).toBe(before + 1);
      await page.close();
    });
  });

  it("fails in the browser when the page's origin is not in CORS_ORIGINS", async () => {
    const listsBefore = calls("ListSessions");
    const preflightsBefore = preflights();
    const page = await openPage(page2.origin, "bob");
    await waitForHistory(page, "Could not load the history.");
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("CORS_ORIGINS");
    // The preflight reached the service; the browser then refused to send the call.
    await expect.poll(() => preflights()).toBe(preflightsBefore + 1);
    expect(calls("ListSessions")).toBe(listsBefore);
    await page.screenshot({ path: join(OUTPUT, "cors-refused.png") });
    await page.close();
  });
});
