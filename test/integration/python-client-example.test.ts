import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testStore } from "../support/database.js";
import { REPO } from "../support/entry.js";
import { insertQuiz } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

const PYTHON = "/usr/bin/python3";
const hasGrpc =
  spawnSync(PYTHON, ["-c", "import grpc, google.protobuf"], { stdio: "ignore" }).status === 0;

/** examples/python/client.py run in `cwd`; resolves with its output and exit code. */
function runClient(cwd: string, env: Record<string, string>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    const child = spawn(PYTHON, [join(REPO, "examples/python/client.py")], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("exit", (code) => done({ code, stdout, stderr }));
  });
}

describe.skipIf(testStore() === "mysql" || !hasGrpc)("examples/python/client.py", () => {
  let svc: TestService;
  let dir: string;

  beforeAll(async () => {
    svc = await startTestService();
    dir = mkdtempSync(join(tmpdir(), "python-client-"));
  });
  afterAll(async () => {
    await svc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("runs from another folder with grpcio and no generated code, printing each call", async () => {
    const { quizId } = await insertQuiz(svc.db, { questions: 2 });
    const run = await runClient(dir, {
      GRPC_TARGET: new URL(svc.baseUrl).host,
      QUIZ_ID: quizId,
      TOKEN: await svc.token("python-example"),
      DESCRIPTORS: join(dir, "practice.binpb"),
    });
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines).toEqual([
      expect.stringMatching(new RegExp(`^GetQuiz\\(${quizId}\\) -> ".+", 2 questions$`)),
      expect.stringMatching(
        new RegExp(`^StartSession\\(${quizId}\\) -> created session \\S+ \\(full, 2 questions\\)$`),
      ),
      expect.stringMatching(/^SubmitAnswer\(".+", "Paris"\) -> wrong$/),
      expect.stringMatching(/^CompleteSession\([0-9a-f-]{36}\) -> 0 of 2 right: 0%$/),
      expect.stringMatching(
        new RegExp(`^ListSessions\\(${quizId}\\) -> newest first: [0-9a-f-]{36} 0%$`),
      ),
      "GetQuiz(999999) -> NOT_FOUND: quiz not found",
    ]);
  });
});
