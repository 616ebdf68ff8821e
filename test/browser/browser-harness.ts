import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { type BrowserContext, chromium, type Locator, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, expect } from "vitest";
import { loadConfig } from "../../src/config.js";
import { insertDemoContent } from "../../src/db/demo-content.js";
import { loadPracticePage } from "../../src/web/practice-page.js";
import type { SessionRow } from "../support/fixtures.js";
import { startTestService, TEST_SECRET, type TestService } from "../support/service.js";
import { type StaticServer, serveStatic } from "./static-server.js";

/**
 * What the browser tests share: the practice page (examples/web) built with
 * Vite, the real service serving it (same origin, the token in the URL
 * fragment), the static build on two other origins (one in CORS_ORIGINS, one
 * not), Debian's Chromium, the service's request log, and the page's parts
 * as a user finds them. A test file calls `useBrowserHarness()` once.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const OUTPUT = resolve("test-results/browser");
export const DAY = 86_400_000;

/** One line of the service's request log. */
interface LogLine {
  msg?: string;
  transport?: string;
  procedure?: string;
  status?: number;
}

let workDir: string;
export let page1: StaticServer; // an origin in CORS_ORIGINS
export let page2: StaticServer; // the same page on an origin that is not
export let svc: TestService;
/** The demo quizzes: "Capitals" (4 questions) and "Arithmetic" (3). */
export let capitals: string;
export let arithmetic: string;
let context: BrowserContext;
const log: LogLine[] = [];
/** The service's log lines as written, to look for what must never be in them. */
export const rawLog: string[] = [];

/** How many requests the service logged that `filter` accepts. */
export const requests = (filter: (line: LogLine) => boolean) =>
  log.filter((l) => l.msg === "request" && filter(l)).length;
// A CORS preflight is logged with transport "preflight", apart from the calls.
export const preflights = () => requests((l) => l.transport === "preflight");
/** Calls of one procedure (not their preflights). */
export const calls = (service: string, method: string) =>
  requests(
    (l) => l.procedure === `/practice.v1.${service}/${method}` && l.transport !== "preflight",
  );

/** Registers the set-up and tear-down above on the calling test file. */
export function useBrowserHarness(): void {
  beforeAll(setUp);
  afterAll(tearDown);
}

async function setUp() {
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
}

async function tearDown() {
  await context?.close();
  await svc?.close();
  await page1?.close();
  await page2?.close();
  if (workDir) await rm(workDir, { recursive: true, force: true });
}

/** Cuts (true) or restores the network of every tab, as a train's tunnel does. */
export const setOffline = (offline: boolean) => context.setOffline(offline);

/** A new tab that records console errors and uncaught exceptions. */
export async function newPage(): Promise<{ page: Page; consoleErrors: string[] }> {
  const page = await context.newPage();
  const consoleErrors: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  page.on("pageerror", (err) => consoleErrors.push(String(err)));
  return { page, consoleErrors };
}

/** The page as the service serves it, as `npm start` prints its URL; no quiz: the quiz list. */
export async function openServed(user: string, quizId?: string) {
  const opened = await newPage();
  const token = await svc.token(user);
  const query = quizId === undefined ? "" : `?quiz=${quizId}`;
  await opened.page.goto(`${svc.baseUrl}/practice/${query}#token=${token}`);
  return { ...opened, token };
}

/** Each question's state on the page (`data-state`: saved, sending, sent, refused, draft, empty). */
export const questionStates = (page: Page) =>
  page
    .locator("li.question")
    .evaluateAll((items) => items.map((i) => i.getAttribute("data-state")));

/** What the service stored for a session, read through the REST API as its user. */
export async function storedSession(user: string, sessionId: string) {
  const res = await svc.rest(user, "GET", `/sessions/${sessionId}`);
  expect(res.status).toBe(200);
  return (await res.json()) as {
    completed_at: string | null;
    score_percentage: number | null;
    answers: { question_id: string; user_answer: string }[];
  };
}

/** The events the service wrote for a session, by type (the outbox: no relay runs here). */
export async function eventCounts(sessionId: string): Promise<Record<string, number>> {
  const rows = await svc.db
    .selectFrom("practice_outbox")
    .select("type")
    .where("session_id", "=", sessionId)
    .execute();
  const counts: Record<string, number> = {};
  for (const { type } of rows) counts[type] = (counts[type] ?? 0) + 1;
  return counts;
}

/** The static build on another origin, told where the service is. */
export async function openElsewhere(
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
export const isFocused = (target: Locator) =>
  target.evaluate((el) => el === el.ownerDocument.activeElement);

/** Presses Tab until `target` has the focus: it is reachable with the keyboard. */
export async function tabTo(page: Page, target: Locator) {
  for (let i = 0; i < 40; i++) {
    if (await isFocused(target)) return;
    await page.keyboard.press("Tab");
  }
  throw new Error(`Tab never reached ${target}`);
}

export const progress = (page: Page) => page.locator("#progress");
export const historyStatus = (page: Page) => page.locator("#history-status");
export const loadMore = (page: Page) => page.getByRole("button", { name: "Load more" });
export const answerField = (page: Page, prompt: string) =>
  page.getByRole("textbox", { name: prompt });
export const feedbackOf = (page: Page, prompt: string) =>
  page.locator("li.question", { has: answerField(page, prompt) }).locator(".feedback");

/** Types an answer into a question's field and sends it with Enter. */
export async function answer(page: Page, prompt: string, text: string) {
  await answerField(page, prompt).fill(text);
  await answerField(page, prompt).press("Enter");
}

/** Whether the element is wholly inside the viewport as it is scrolled now. */
export const inView = (target: Locator) =>
  target.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const view = el.ownerDocument.defaultView;
    // Layout is in fractions of a pixel: an element scrolled to the bottom edge may end 0.3 px past it.
    return box.height > 0 && box.top >= -1 && box.bottom <= (view?.innerHeight ?? 0) + 1;
  });

/** A score as the history shows it: the percentage and its band in words. */
export const scored = (percent: number) =>
  `${percent}% · ${percent < 50 ? "low" : percent < 80 ? "fair" : "good"}`;

/** The history table as the user sees it: id, started_at and the two result columns. */
export async function historyRows(page: Page) {
  return page.locator("#history tr").evaluateAll((rows) =>
    rows.map((row) => ({
      id: row.getAttribute("data-session-id") ?? "",
      startedAt: row.querySelector("time")?.getAttribute("datetime") ?? "",
      result: row.querySelectorAll("td")[1]?.textContent ?? "",
      answers: row.querySelectorAll("td")[2]?.textContent ?? "",
    })),
  );
}

/** Waits until the history says `text` (it has loaded what it says). */
export async function waitForHistory(page: Page, text: string) {
  await expect.poll(() => historyStatus(page).textContent()).toBe(text);
}

let nextId = 0x2000;

/** Completed sessions of `user` on `quizId`, one a day, ending yesterday. */
export function completedSessions(user: string, quizId: string, corrects: number[]): SessionRow[] {
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
