import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testStore } from "../support/database.js";
import { runEntryPoint } from "../support/entry.js";
import { insertQuiz } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

// The example talks to the service over the network: the store behind it does not matter.
describe.skipIf(testStore() === "mysql")("examples/client, run from another folder", () => {
  let svc: TestService;
  let quizId: string;
  let elsewhere: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    svc = await startTestService();
    quizId = (await insertQuiz(svc.db, { questions: 3 })).quizId;
    elsewhere = mkdtempSync(join(tmpdir(), "client-example-"));
    env = { BASE_URL: svc.baseUrl, QUIZ_ID: quizId, TOKEN: await svc.token("client-example") };
  });
  afterAll(async () => {
    await svc?.close();
    if (elsewhere) rmSync(elsewhere, { recursive: true, force: true });
  });

  it("prints the REST half and the Connect half, each call with its answer", async () => {
    const run = await runEntryPoint("examples/client/main.ts", { cwd: elsewhere, env });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(`^REST {4}GET  /quizzes/${quizId} -> 200 ".+", 3 questions$`),
      ),
      expect.stringMatching(
        new RegExp(
          `^REST {4}POST /quizzes/${quizId}/sessions -> 201 created session [0-9a-f-]{36}$`,
        ),
      ),
      expect.stringMatching(new RegExp(`^connect GetQuiz\\(${quizId}\\) -> ".+", 3 questions$`)),
      expect.stringMatching(
        new RegExp(
          `^connect StartSession\\(${quizId}\\) -> resumed session \\S+ \\(full, 3 questions\\)$`,
        ),
      ),
      expect.stringMatching(/^connect SubmitAnswer\(".+", "Paris"\) -> wrong$/),
      expect.stringMatching(/^connect CompleteSession\([0-9a-f-]{36}\) -> 0 of 3 right: 0%$/),
      expect.stringMatching(
        new RegExp(`^connect ListSessions\\(${quizId}\\) -> newest first: [0-9a-f-]{36} 0%$`),
      ),
      "connect GetQuiz(999999) -> NotFound: quiz not found",
    ]);
  });

  it("leaves no round open: run again, it creates a session anew and prints the same", async () => {
    const again = await runEntryPoint("examples/client/main.ts", { cwd: elsewhere, env });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^REST {4}POST \/quizzes\/\d+\/sessions -> 201 created session /m);
    expect(again.stdout).toMatch(/^connect SubmitAnswer\(".+", "Paris"\) -> wrong$/m);
  });

  it("says which round it resumed: a missed one holds only some of the quiz", async () => {
    const learner = "client-example-missed";
    const token = await svc.token(learner);
    await runEntryPoint("examples/client/main.ts", {
      cwd: elsewhere,
      env: { ...env, TOKEN: token },
    });
    const missed = await svc.rest(learner, "POST", `/quizzes/${quizId}/sessions`, {
      headers: { "content-type": "application/json" },
      body: '{"mode":"missed"}',
    });
    expect(missed.status).toBe(201);
    const run = await runEntryPoint("examples/client/main.ts", {
      cwd: elsewhere,
      env: { ...env, TOKEN: token },
    });
    expect(run.stdout).toMatch(/^REST {4}POST \/quizzes\/\d+\/sessions -> 200 resumed session /m);
    expect(run.stdout).toMatch(
      /^connect StartSession\(\d+\) -> resumed session \S+ \(missed, 3 questions\)$/m,
    );
  });

  it("speaks gRPC too (PROTOCOL=grpc)", async () => {
    const run = await runEntryPoint("examples/client/main.ts", {
      cwd: elsewhere,
      env: { ...env, PROTOCOL: "grpc" },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^grpc {4}CompleteSession\([0-9a-f-]{36}\) -> 0 of 3 right: 0%$/m);
  });

  it("without a token: one line saying where to get one, exit 1", async () => {
    const run = await runEntryPoint("examples/client/main.ts", {
      cwd: elsewhere,
      env: { ...env, TOKEN: undefined },
    });
    expect(run.errorLines).toEqual([
      "set TOKEN: `npm start` prints one for user demo, or run `npm run token -- alice`",
    ]);
    expect(run.code).toBe(1);
  });
});
