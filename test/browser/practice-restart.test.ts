import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signToken } from "../../src/auth/tokens.js";
import { openDatabase } from "../../src/db/connect.js";
import { TEST_SECRET } from "../support/service.js";
import { defaultDatabaseLimits } from "../support/settings.js";
import {
  answer,
  newPage,
  OUTPUT,
  page1,
  progress,
  questionStates,
  useBrowserHarness,
} from "./browser-harness.js";
import { ServiceProcess } from "./service-process.js";

/**
 * The service is killed (SIGKILL) in the middle of a quiz and started again
 * on the same port and the same SQLite file: the page, on an origin of its
 * own, keeps what the learner gives meanwhile and sends it when the service
 * is back, each answer stored once.
 */
useBrowserHarness();

let dir: string;
let service: ServiceProcess;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "practice-restart-"));
  service = new ServiceProcess({
    DATABASE_URL: `sqlite:${join(dir, "practice.db")}`,
    JWT_SECRET: TEST_SECRET,
    CORS_ORIGINS: page1.origin,
  });
  await service.start();
});

afterAll(async () => {
  await service?.kill();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function rest(user: string, path: string, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("authorization", `Bearer ${await signToken(TEST_SECRET, user)}`);
  return fetch(`${service.baseUrl}${path}`, { ...init, headers });
}

describe("a server killed and restarted in the middle of a quiz", () => {
  it("loses no answer: the page sends what it kept once the service is back", async () => {
    const USER = "kai";
    // The demo content the service loads into an empty SQLite file: "Capitals" first.
    const list = (await (await rest(USER, "/quizzes")).json()) as {
      quizzes: { id: string; title: string }[];
    };
    const capitals = list.quizzes.find((q) => q.title === "Capitals")?.id ?? "";
    const { page, consoleErrors } = await newPage();
    const query = new URLSearchParams({ service: service.baseUrl, quiz: capitals });
    await page.goto(`${page1.origin}/?${query}#token=${await signToken(TEST_SECRET, USER)}`);

    await page.getByRole("button", { name: "Start practice" }).click();
    await expect.poll(() => progress(page).textContent()).toMatch(/^Started a new session\./);
    const sessionId = (await page.locator("#session").getAttribute("data-session-id")) ?? "";
    await answer(page, "Capital of France?", "Paris");
    await expect.poll(() => questionStates(page)).toEqual(["sent", "empty", "empty", "empty"]);

    await service.kill();
    await answer(page, "Capital of Japan?", "Tokyo");
    await answer(page, "Capital of Canada?", "Ottawa");
    await answer(page, "Capital of Australia?", "Sydney");
    await page.getByRole("button", { name: "Complete session" }).click();
    await expect.poll(() => questionStates(page)).toEqual(["sent", "saved", "saved", "saved"]);
    await expect
      .poll(() => page.locator("#complete-status").textContent())
      .toMatch(/^Completion saved on this device/);
    await expect.poll(() => page.locator("#sync").textContent()).toMatch(/cannot be reached/);
    await page.screenshot({ path: join(OUTPUT, "11-server-down.png"), fullPage: true });

    // Back on the same port and file: the sender's next try gets through.
    await service.start();
    await expect.poll(() => page.locator("#score").textContent(), { timeout: 30_000 }).toBe("75%");

    const stored = (await (await rest(USER, `/sessions/${sessionId}`)).json()) as {
      completed_at: string | null;
      answers: { user_answer: string }[];
    };
    expect(stored.completed_at).not.toBeNull();
    expect(stored.answers.map((a) => a.user_answer)).toEqual([
      "Paris",
      "Tokyo",
      "Ottawa",
      "Sydney",
    ]);
    // One event per answer in the file the service writes (no relay runs: no NATS_URL).
    const db = openDatabase({
      url: `sqlite:${join(dir, "practice.db")}`,
      poolSize: 1,
      connectTimeoutMs: 1000,
      limits: defaultDatabaseLimits(),
    });
    try {
      const events = await db.db
        .selectFrom("practice_outbox")
        .select("type")
        .where("session_id", "=", sessionId)
        .execute();
      expect(events.map((e) => e.type).sort()).toEqual([
        "practice.answer.submitted",
        "practice.answer.submitted",
        "practice.answer.submitted",
        "practice.answer.submitted",
        "practice.session.completed",
        "practice.session.started",
      ]);
    } finally {
      await db.close();
    }
    // Chromium logs the calls the dead port refused; nothing else went wrong.
    expect(
      consoleErrors.filter((e) => !/ERR_CONNECTION_REFUSED|Failed to load resource/.test(e)),
    ).toEqual([]);
    await page.close();
  });
});
