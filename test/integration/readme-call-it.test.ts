import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertDemoContent } from "../../src/db/demo-content.js";
import { testStore } from "../support/database.js";
import { hasPythonGrpc } from "../support/rpc-exchange.js";
import { startTestService, type TestService } from "../support/service.js";

// The README's "Call it" section, command by command, as a new user runs it
// after `npm start`: in order, in one shell (so `S=$(...)` carries on), with
// TOKEN set as the banner's `export` line sets it, against a started
// service on the demo quizzes. Only the address is the test service's.

const ROOT = resolve(import.meta.dirname, "../..");
const README_URL = "http://127.0.0.1:8080";
const MARK = "@@readme-command-done";

/** The shell commands of the README's "Call it" section, continuation lines joined. */
function callItCommands(): string[] {
  const readme = readFileSync(resolve(ROOT, "README.md"), "utf8");
  const section = readme.split(/^## Call it$/m)[1]?.split(/^## /m)[0] ?? "";
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1] ?? "");
  return blocks.flatMap((block) =>
    block
      .replace(/\\\n\s*/g, "")
      .split("\n")
      .map((line) => line.trim())
      .filter((line) => line !== "" && !line.startsWith("#")),
  );
}

interface Ran {
  command: string;
  output: string;
  code: number;
}

/** Runs the commands in one bash, each one's output and exit status apart. */
function runInOrder(commands: string[], env: Record<string, string>): Promise<Ran[]> {
  const script = commands
    .map((c) => `${c}\necho; echo "${MARK} $?"`)
    .join("\n")
    .replaceAll(README_URL, env.BASE_URL ?? README_URL)
    .replaceAll("/path/to/practice-sessions", ROOT);
  return new Promise((done, fail) => {
    const child = spawn("bash", ["-c", script], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      out += d;
    });
    child.on("error", fail);
    child.on("close", () => {
      const parts = out.split(new RegExp(`^${MARK} (\\d+)$`, "m"));
      const ran: Ran[] = [];
      for (let i = 0; i < commands.length; i++) {
        ran.push({
          command: commands[i] ?? "",
          output: (parts[2 * i] ?? "").trim(),
          code: Number(parts[2 * i + 1] ?? -1),
        });
      }
      done(ran);
    });
  });
}

const json = (ran: Ran) => JSON.parse(ran.output) as Record<string, unknown>;

// The commands talk to the service over the network: the store behind it does not matter.
describe.skipIf(testStore() === "mysql")('the README\'s "Call it" section', () => {
  let svc: TestService;
  let ran: Ran[];

  beforeAll(async () => {
    svc = await startTestService();
    await insertDemoContent(svc.db);
    const env = {
      TOKEN: await svc.token("demo"),
      BASE_URL: svc.baseUrl,
      GRPC_TARGET: new URL(svc.baseUrl).host,
    };
    ran = await runInOrder(callItCommands(), env);
  }, 240_000);

  afterAll(async () => {
    await svc?.close();
  });

  /** The one command that contains all of `words`. */
  function find(...words: string[]): Ran {
    const found = ran.filter((r) => words.every((w) => r.command.includes(w)));
    expect(found, words.join(" ")).toHaveLength(1);
    return found[0] as Ran;
  }

  it("finds the commands, and every one of them exits 0 with no error answer", () => {
    expect(ran.length).toBeGreaterThanOrEqual(12);
    for (const r of ran) {
      if (r.command.includes("python3") && /No module named 'grpc'/.test(r.output)) continue;
      expect({ command: r.command, code: r.code }).toEqual({ command: r.command, code: 0 });
      // A problem+json (REST) or a Connect error (buf curl) carries a `code` member.
      expect(r.output, r.command).not.toMatch(/"code":\s*"[a-z_]+"/);
    }
  });

  it("REST: the quizzes, a quiz, a session answered and completed, the history, then the 3 missed at once and what is due", () => {
    const list = ran.filter((r) => r.command.endsWith("/quizzes"));
    expect(list).toHaveLength(1);
    expect(json(list[0] as Ran).quizzes).toHaveLength(2);
    const quiz = ran.filter((r) => r.command.endsWith("/quizzes/1"));
    expect(json(quiz[0] as Ran)).toMatchObject({ title: "Capitals" });
    const answered = json(find("user_answer", "Paris"));
    expect(answered).toMatchObject({ answer: { is_correct: true } });
    const completed = json(find("/complete"));
    expect(completed).toMatchObject({ score_percentage: 25, total_questions: 4 });
    const history = json(find("status=completed"));
    expect((history.sessions as unknown[]).length).toBe(1);
    const missed = json(find('"mode":"missed"'));
    expect(missed).toMatchObject({ mode: "missed", total_questions: 3, answers: [] });
    const due = json(find("/review"));
    expect(due).toMatchObject({ due_count: 0, new_count: 0 });
    expect(due.next_due_at).toEqual(expect.any(String));
  });

  it("gRPC with buf curl: the services by reflection, then StartSession resumes the session in progress", () => {
    expect(find("--list-services").output).toContain("practice.v1.PracticeSessionService");
    const start = json(find("StartSession"));
    expect(start).toMatchObject({ session: { mode: "SESSION_MODE_MISSED" } });
    expect(start.created).toBeUndefined();
  });

  it.runIf(hasPythonGrpc)("the Python example answers the session it resumes", () => {
    const r = find("examples/python/client.py");
    expect(r.output).toMatch(/^SubmitAnswer\("[^"]+", "Paris"\) -> (right|wrong)$/m);
  });

  it("the TypeScript example runs from the repository and from any folder, answering the session it resumes", () => {
    for (const r of ran.filter((x) => x.command.includes("example:client"))) {
      expect(r.output).toMatch(/^REST {4}GET {2}\/quizzes\/1 -> 200 "Capitals", 4 questions$/m);
      // The session in progress is the missed one (questions 2-4): the example answers one of those.
      expect(r.output).toMatch(/^connect SubmitAnswer\("[^"]+", "Paris"\) -> (right|wrong)$/m);
      expect(r.output).toMatch(/^connect ListSessions\(1\) -> \d+ session\(s\)/m);
    }
  });
});
