import type { DescField } from "@bufbuild/protobuf";
import {
  CompleteSessionRequestSchema,
  GetSessionRequestSchema,
  ListDueQuestionsRequestSchema,
  ListSessionsRequestSchema,
  StartSessionRequestSchema,
  SubmitAnswerRequestSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import {
  GetQuizRequestSchema,
  ListQuizzesRequestSchema,
} from "../../gen/practice/v1/quiz_service_pb.js";
import { errors, InvalidRequest } from "../app/errors.js";
import { DEFAULT_QUIZ_PAGE_SIZE } from "../app/list-quizzes.js";
import { fieldRules } from "../contract/field-rules.js";
import { violationMessage } from "../contract/violation-messages.js";
import { DEFAULT_PAGE_SIZE } from "../domain/session.js";
import { requestSchemas } from "./request-schemas.js";
import { restRequest } from "./rest-requests.js";

/** Each REST operation's request: the RPC request message it is, and where its fields come from. */
export const requests = {
  listQuizzes: restRequest(ListQuizzesRequestSchema, "query"),
  getQuiz: restRequest(GetQuizRequestSchema, "query", { quiz_id: "quiz_id" }),
  listSessions: restRequest(ListSessionsRequestSchema, "query", { quiz_id: "quiz_id" }),
  startSession: restRequest(StartSessionRequestSchema, "body", { quiz_id: "quiz_id" }),
  listDueQuestions: restRequest(ListDueQuestionsRequestSchema, "query", { quiz_id: "quiz_id" }),
  getSession: restRequest(GetSessionRequestSchema, "query", { id: "session_id" }),
  submitAnswer: restRequest(SubmitAnswerRequestSchema, "body", { id: "session_id" }),
  completeSession: restRequest(CompleteSessionRequestSchema, "body", { id: "session_id" }),
};

/** What /openapi.json says of each field, beside the rules the schemas state. */
const descriptions = (pageSize: number): Record<string, (field: DescField) => string> => ({
  quiz_id: (f) =>
    `The quiz's id (at most ${fieldRules(f).maxLength} characters). A value that names no ` +
    "quiz (`abc`, `0`) is 404.",
  id: (f) =>
    `The session's id (at most ${fieldRules(f).maxLength} characters). Another user's, ` +
    "unknown or malformed ids are 404.",
  status: () => "Only in-progress (`active`) or only `completed` sessions; both if absent.",
  limit: (f) => `Page size, 1 to ${fieldRules(f).maximum}; ${pageSize} if absent.`,
  cursor: () => "`next_cursor` of the previous page; absent or empty for the first page.",
  mode: () =>
    "`full` (the default): the quiz's questions at start. `review`: the caller's questions " +
    "due for review at start (at most 20, earliest due first). `missed`: the questions the " +
    "caller did not answer correctly (wrong or unanswered) in their latest completed " +
    "session of the quiz, in quiz order.",
  question_id: () => "A question of the session's snapshot.",
  user_answer: (f) =>
    `1 to ${fieldRules(f).maxLength} characters (code points), not only white space; ` +
    "stored as sent.",
});

const describe =
  (pageSize = DEFAULT_PAGE_SIZE) =>
  (name: string, field: DescField) =>
    descriptions(pageSize)[name]?.(field) ?? "";

/** The request schemas of each REST operation, for its route and /openapi.json. */
export const requestSchemasOf = {
  listQuizzes: requestSchemas(requests.listQuizzes, describe(DEFAULT_QUIZ_PAGE_SIZE)),
  getQuiz: requestSchemas(requests.getQuiz, describe()),
  listSessions: requestSchemas(requests.listSessions, describe()),
  startSession: requestSchemas(requests.startSession, describe()),
  listDueQuestions: requestSchemas(requests.listDueQuestions, describe()),
  getSession: requestSchemas(requests.getSession, describe()),
  submitAnswer: requestSchemas(requests.submitAnswer, describe()),
  completeSession: requestSchemas(requests.completeSession, describe()),
};

/**
 * The refusal of a path whose id segment is longer than the router reads
 * (limits.ts MAX_PARAM_LENGTH, above any id the rules allow even percent-encoded): too long
 * an id, as the validation step says it; a path of no operation is no route.
 */
export function pathParameterTooLong(url: string): Error {
  const path = url.replace(/^\/api(?=\/)/, "");
  const request = path.startsWith("/quizzes/")
    ? requests.getQuiz
    : path.startsWith("/sessions/")
      ? requests.getSession
      : undefined;
  const [name, field] = request?.path[0] ?? [];
  if (name === undefined || field === undefined) return errors.routeNotFound();
  const message = violationMessage(field, "string.max_len", undefined, "", name);
  return new InvalidRequest([{ field: name, rule: "string.max_len", message }]);
}
