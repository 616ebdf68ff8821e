import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countRows, insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

// A token's `sub` is the user id stored and published: one holding a control
// character (a NUL ends it for a reader of C strings; U+202E shows it
// reversed) is refused with 401 and one reason, on every transport.

let svc: TestService;
let quiz: QuizFixture;

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db);
});

afterAll(async () => {
  await svc?.close();
});

const SUBJECTS = [
  ["a NUL", "nul\0user"],
  ["a C0 control (tab)", "tab\tuser"],
  ["a newline", "line\nuser"],
  ["DEL", "del\u007Fuser"],
  ["a C1 control (U+0085)", "next\u0085line"],
  ["a right-to-left override (U+202E)", "admin\u202Etxt.exe"],
  ["a left-to-right isolate (U+2066)", "iso\u2066late"],
  ["a right-to-left mark (U+200F)", "mark\u200Fuser"],
] as const;

const REASON = "control character";

describe("a token whose sub holds a control character", () => {
  for (const [what, sub] of SUBJECTS) {
    it(`${what}: 401 unauthenticated with the reason, on REST, Connect and gRPC; nothing stored`, async () => {
      const before = await countRows(svc.db, "practice_sessions");
      const rest = await svc.rest(sub, "POST", `/quizzes/${quiz.quizId}/sessions`);
      expect(rest.status).toBe(401);
      expect(rest.headers.get("www-authenticate")).toMatch(/^Bearer/);
      const problem = (await rest.json()) as { code: string; detail: string };
      expect(problem.code).toBe("unauthenticated");
      expect(problem.detail).toContain(REASON);

      const headers = await svc.auth(sub);
      const connect = await svc.connect
        .startSession({ quizId: quiz.quizId }, { headers })
        .catch((e: unknown) => ConnectError.from(e));
      expect(connect).toBeInstanceOf(ConnectError);
      expect((connect as ConnectError).code).toBe(Code.Unauthenticated);
      expect((connect as ConnectError).rawMessage).toContain(REASON);

      const grpc = await svc.grpc.startSession({ quizId: quiz.quizId }, headers).then(
        () => undefined,
        (e: { code: number; details: string }) => e,
      );
      expect(grpc?.code).toBe(16);
      expect(grpc?.details).toContain(REASON);
      expect(await countRows(svc.db, "practice_sessions")).toBe(before);
    });
  }

  it("a sub with other unusual but printable characters is a user as it is", async () => {
    for (const sub of ["ünïcödé ✓", "o'brien\\", "a b", "\u{1F600}"]) {
      const res = await svc.rest(sub, "POST", `/quizzes/${quiz.quizId}/sessions`);
      expect(res.status, sub).toBe(201);
    }
  });
});
