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
      expect.stringMatching(new RegExp(`^connect StartSession\\(${quizId}\\) -> resumed session `)),
      expect.stringMatching(/^connect SubmitAnswer\(".+", "Paris"\) -> (right|wrong)$/),
      expect.stringMatching(
        new RegExp(`^connect ListSessions\\(${quizId}\\) -> 1 session\\(s\\): `),
      ),
      "connect GetQuiz(999999) -> NotFound: quiz not found",
    ]);
  });

  it("speaks gRPC too (PROTOCOL=grpc)", async () => {
    const run = await runEntryPoint("examples/client/main.ts", {
      cwd: elsewhere,
      env: { ...env, PROTOCOL: "grpc" },
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^grpc {4}ListSessions\(\d+\) -> 1 session\(s\)/m);
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
