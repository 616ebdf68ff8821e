import { create } from "@bufbuild/protobuf";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { describe, expect, it } from "vitest";
import {
  ListSessionsRequestSchema,
  type SessionStatus,
  SubmitAnswerRequestSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { InvalidRequest } from "../app/errors.js";
import { invalidRequest, WELL_FORMED_RULE, withViolationsDetail } from "./check-request.js";

const answer = (init: { sessionId?: string; questionId?: string; userAnswer?: string }) =>
  create(SubmitAnswerRequestSchema, {
    sessionId: "01900000-0000-7000-8000-000000000000",
    questionId: "1",
    userAnswer: "Paris",
    ...init,
  });

describe("invalidRequest", () => {
  it("passes a valid request, paired surrogates and 1000 emoji included", () => {
    expect(invalidRequest(SubmitAnswerRequestSchema, answer({}))).toBeUndefined();
    const emoji = answer({ userAnswer: "😀".repeat(1000) });
    expect(invalidRequest(SubmitAnswerRequestSchema, emoji)).toBeUndefined();
  });

  it.each([["\ud800"], ["x\udc00"], ["\udc00\ud800"], ["😀\ud83d"]])(
    "names a string that is not well-formed Unicode (%j)",
    (text) => {
      const err = invalidRequest(SubmitAnswerRequestSchema, answer({ userAnswer: text }));
      expect(err?.violations).toEqual([
        {
          field: "user_answer",
          rule: WELL_FORMED_RULE,
          message: "user_answer is not well-formed Unicode",
        },
      ]);
    },
  );

  it("names every violation in the order of the fields, and says the first", () => {
    const err = invalidRequest(
      ListSessionsRequestSchema,
      create(ListSessionsRequestSchema, {
        quizId: "",
        status: 9 as SessionStatus,
        limit: 101,
        cursor: "\ud800",
      }),
    );
    expect(err?.violations.map((v) => [v.field, v.rule])).toEqual([
      ["quiz_id", "required"],
      ["status", "enum.defined_only"],
      ["limit", "int32.gte_lte"],
      ["cursor", WELL_FORMED_RULE],
    ]);
    expect(err?.rawMessage).toBe("quiz_id is required");
    const [detail] = err?.findDetails(ViolationsSchema) ?? [];
    expect(detail?.violations.map((v) => v.field?.elements[0]?.fieldNumber)).toEqual([1, 2, 3, 4]);
  });
});

describe("withViolationsDetail", () => {
  it("gives a use case's refusal of a field its buf.validate.Violations detail", () => {
    const err = new InvalidRequest([
      { field: "question_id", rule: "question_id.in_session", message: "not in the session" },
    ]);
    const [detail] = withViolationsDetail(SubmitAnswerRequestSchema, err).findDetails(
      ViolationsSchema,
    );
    expect(detail?.violations).toMatchObject([
      {
        ruleId: "question_id.in_session",
        message: "not in the session",
        field: { elements: [{ fieldNumber: 2, fieldName: "question_id" }] },
      },
    ]);
  });
});
