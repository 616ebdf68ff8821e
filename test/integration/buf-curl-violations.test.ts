import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.js";

// What a new client sees, with nothing but the running service: buf curl reads the schema by
// reflection (buf/validate's with it) and shows a refusal's every violation in its details.

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService();
});
afterAll(async () => {
  await svc?.close();
});

it("buf curl, by reflection alone: a request with three mistakes names the three fields", async () => {
  const run = promisify(execFile)("node_modules/.bin/buf", [
    "curl",
    "--protocol",
    "grpc",
    "--http2-prior-knowledge",
    "-H",
    `authorization: Bearer ${await svc.token("curl")}`,
    "-d",
    JSON.stringify({ session_id: "", question_id: "", user_answer: "x".repeat(1001) }),
    `${svc.baseUrl}/practice.v1.PracticeSessionService/SubmitAnswer`,
  ]);
  const failed = (await run.then(
    () => undefined,
    (e: unknown) => e,
  )) as { stdout: string; stderr: string } | undefined;
  expect(failed).toBeDefined();
  const error = JSON.parse(failed?.stderr || failed?.stdout || "{}") as {
    code: string;
    message: string;
    details: { type: string; debug: { violations: { field: unknown; ruleId: string }[] } }[];
  };
  expect(error.code).toBe("invalid_argument");
  expect(error.message).toBe("session_id is required");
  const [details] = error.details;
  expect(details?.type).toBe("buf.validate.Violations");
  expect(
    details?.debug.violations.map((v) => [
      (v.field as { elements: { fieldName: string }[] }).elements[0]?.fieldName,
      v.ruleId,
    ]),
  ).toEqual([
    ["session_id", "required"],
    ["question_id", "required"],
    ["user_answer", "string.max_len"],
  ]);
});
