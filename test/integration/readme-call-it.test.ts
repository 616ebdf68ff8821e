import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertDemoContent } from "../../src/db/demo-content.js";
import { testStore } from "../support/database.js";
import { hasPythonGrpc } from "../support/rpc-exchange.js";
import { startTestService, TEST_SECRET, type TestService } from "../support/service.js";

// The README's "Call it" section, command by command, as a new user runs it
// after `npm start`: in order, in one shell (so `S=$(...)` carries on), with
// TOKEN set as the banner's `export` line sets it, against a started
// service on the demo quizzes. Only the address is the test service's.

const ROOT = resolve(import.meta.dirname, "../..");
const README_URL = "http://127.0.0.1:8080";
const MARK = "@@readme-command-done";

/**
 * The output an example's README shows (its first unlabelled block), a line
 * pattern each: a session id shown as `019ab…` stands for any.
 */
function shownOutput(readme: string): RegExp[] {
  const text = readFileSync(resolve(ROOT, readme), "utf8");
  // Fenced blocks in order, each with its language: the output is the first without one.
  const blocks = [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)];
  const block = blocks.find((m) => m[1] === "")?.[2] ?? "";
  return block
    .trimEnd()
    .split("\n")
    .map(
      (line) =>
        new RegExp(
          `^${line.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replaceAll("019ab…", "[0-9a-f-]{36}")}$`,
        ),
    );
}

/** What a command printed, without npm's own lines (`> practice-sessions@… script`). */
function printed(ran: Ran): string[] {
  return ran.output.split("\n").filter((line) => line.trim() !== "" && !line.startsWith("> "));
}

/** `lines` line by line as `shown`: each that differs shows in the diff as it was printed. */
function expectAsShown(lines: string[], shown: RegExp[]) {
  const same = "(as shown)";
  expect(lines.map((line, i) => (shown[i]?.test(line) ? same : line))).toEqual(
    shown.map(() => same),
  );
}

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
      // `npm run -s token` signs with it, as it does with the service's own secret.
      JWT_SECRET: TEST_SECRET,
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

  it("gRPC with buf curl: the services by reflection, then StartSession resumes the missed round, as the README says", () => {
    expect(find("--list-services").output).toContain("practice.v1.PracticeSessionService");
    const start = json(find("StartSession"));
    expect(start).toMatchObject({ session: { mode: "SESSION_MODE_MISSED", totalQuestions: 3 } });
    expect(start.created).toBeUndefined();
    const readme = readFileSync(resolve(ROOT, "README.md"), "utf8");
    expect(readme).toMatch(
      /resumes the missed round the REST calls left\s+open: `"mode": "SESSION_MODE_MISSED"`, its 3 questions/,
    );
  });

  it("the TypeScript example, from the repository and from any folder, prints what its README shows", () => {
    const runs = ran.filter((x) => x.command.includes("example:client"));
    expect(runs).toHaveLength(2);
    const shown = shownOutput("examples/client/README.md");
    for (const r of runs) {
      expectAsShown(printed(r), shown);
    }
  });

  it.runIf(hasPythonGrpc)("the Python example prints what its README shows", () => {
    const shown = shownOutput("examples/python/README.md");
    expectAsShown(printed(find("examples/python/client.py")), shown);
  });

  it("the examples leave demo as the README left it: the missed round open, nothing answered", async () => {
    const active = (await (
      await svc.rest("demo", "GET", "/quizzes/1/sessions?status=active")
    ).json()) as { sessions: { id: string }[] };
    expect(active.sessions).toHaveLength(1);
    const session = (await (
      await svc.rest("demo", "GET", `/sessions/${active.sessions[0]?.id}`)
    ).json()) as { mode: string; answers: unknown[] };
    expect(session).toMatchObject({ mode: "missed", answers: [] });
  });
});
