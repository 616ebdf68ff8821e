import { type TSchema, Type } from "@fastify/type-provider-typebox";
import { HTTP_REFUSALS, meaningOfAnswer, meaningOfName } from "../app/codes.js";
import { requestSchemasOf } from "./requests.js";
import {
  AnswerConflictProblem,
  AnswerResult,
  DueQuestions,
  NothingDueProblem,
  Problem,
  Quiz,
  Session,
  SessionDetail,
  SessionPage,
} from "./schemas.js";
import { UNSUPPORTED_MEDIA_TYPE } from "./send-problem.js";

/**
 * The REST gateway's route schemas, one per operation: their requests are the RPCs' request
 * messages (requests.ts), their responses serialize, and together they make /openapi.json, so
 * every response a route can give is listed here.
 */

export const json = <T extends TSchema>(description: string, schema: T) => ({
  description,
  content: { "application/json": { schema } },
});

/** One named example of a problem+json body; an `invalid_argument` names its field. */
const problemExample = (status: number, code: string, detail: string, field?: string) => ({
  value: {
    type: "about:blank",
    title: meaningOfAnswer(code, status).title,
    status,
    detail,
    code,
    ...(field !== undefined && { errors: [{ field, message: detail }] }),
  },
});

/** A problem+json response, with named examples of the bodies it can carry. */
const problems = (
  status: number,
  description: string,
  examples: Record<string, [code: string, detail: string, field?: string]>,
) => ({
  description,
  content: {
    "application/problem+json": {
      schema: Problem,
      examples: Object.fromEntries(
        Object.entries(examples).map(([name, [code, detail, field]]) => [
          name,
          problemExample(status, code, detail, field),
        ]),
      ),
    },
  },
});

export const unauthorized = {
  ...problems(
    401,
    "No bearer token, or one that is malformed, wrongly signed, expired, not yet valid, for " +
      "another issuer or audience, or naming no user: the detail says which.",
    {
      missing: [
        "unauthenticated",
        "no bearer token: send the header authorization: Bearer <token>",
      ],
      signature: [
        "unauthenticated",
        "bearer token's signature does not verify: signed with another key, or altered",
      ],
      expired: ["unauthenticated", "bearer token expired: get a new token"],
    },
  ),
  headers: {
    "WWW-Authenticate": Type.String({
      pattern: '^Bearer error="(invalid_request|invalid_token)", error_description="[^"\\\\]*"$',
      description:
        'RFC 6750: `Bearer error="invalid_request"` when no bearer token came (no header, ' +
        'another scheme), `Bearer error="invalid_token"` for one that fails; ' +
        "`error_description` holds the problem's detail.",
    }),
  },
};
/** POST bodies are JSON only. */
const unsupportedMediaType = problems(
  415,
  "A body sent with another content type than application/json (or with none).",
  { text: [HTTP_REFUSALS.unsupportedMediaType.name, UNSUPPORTED_MEDIA_TYPE] },
);
export const unavailable = problems(503, "The database is unreachable; retry later.", {
  database: ["unavailable", "service temporarily unavailable, try again"],
});
/**
 * A keyset-paged list's 400: its page size, its cursor, or a filter of its own (`filters`);
 * `errors` names every parameter that is wrong, `detail` says the first.
 */
export const pageQueryProblems = (
  filters: Record<string, [code: string, detail: string, field: string]> = {},
) =>
  problems(400, "One or more query parameters are not valid: `errors` names each.", {
    limit: ["invalid_argument", "limit must be an integer from 1 to 100", "limit"],
    ...filters,
    cursor: ["invalid_argument", "cursor is not a next_cursor this service returned", "cursor"],
  });
/** The responses a path parameter brings: 401, its one 404 whatever the cause, 503. */
const parameterErrors = (description: string, example: string, detail: string) => ({
  401: unauthorized,
  404: problems(404, description, { [example]: ["not_found", detail] }),
  503: unavailable,
});
const quizErrors = parameterErrors(
  "The quiz does not exist, is deleted, or is under a deleted study guide (one body for all).",
  "quiz",
  "quiz not found",
);
const sessionErrors = parameterErrors(
  "No such session of the caller's: another user's, unknown or malformed (one body for all).",
  "session",
  "session not found",
);
/**
 * An operation under `/quizzes/{quiz_id}` or `/sessions/{id}`: that path parameter, and
 * after the operation's own responses those the parameter brings (401, 404, 503).
 */
const under =
  <E extends object>(errors: E) =>
  <O extends { response: object }>(operation: O) => ({
    ...operation,
    response: { ...operation.response, ...errors },
  });
const onQuiz = under(quizErrors);
const onSession = under(sessionErrors);
const completed: [string, string] = ["failed_precondition", "session is already completed"];
const expired: [string, string] = [
  "failed_precondition",
  "session expired: it was started more than 7 days ago; start the quiz again for a new session",
];

/**
 * Operations of one OpenAPI tag, each named once: its key is its operationId.
 * In the operation, operationId and tags come first, as OpenAPI lists them.
 */
const tagged = <O extends Record<string, object>>(tag: string, operations: O) =>
  Object.fromEntries(
    Object.entries(operations).map(([operationId, operation]) => [
      operationId,
      { operationId, tags: [tag], ...operation },
    ]),
  ) as { [K in keyof O]: { operationId: K; tags: string[] } & O[K] };

export const { getQuiz } = tagged("quizzes", {
  getQuiz: onQuiz({
    ...requestSchemasOf.getQuiz,
    summary: "A quiz's title and questions, by position, without correct answers",
    description:
      "A live quiz on a live study guide. Missing, deleted, or under a deleted study guide: " +
      "the same 404 as the list.",
    response: { 200: json("The quiz.", Quiz) },
  }),
});

export const { listSessions, startSession, getSession, submitAnswer, completeSession } = tagged(
  "sessions",
  {
    listSessions: onQuiz({
      ...requestSchemasOf.listSessions,
      summary: "List the caller's sessions on a quiz, newest first",
      description:
        "Ordered by started_at descending, then id descending; keyset pages. Only the " +
        "caller's own sessions. Each query parameter may be given at most once.",
      response: {
        200: json("A page of sessions.", SessionPage),
        400: pageQueryProblems({
          status: ["invalid_argument", 'status must be "active" or "completed"', "status"],
        }),
      },
    }),
    startSession: onQuiz({
      ...requestSchemasOf.startSession,
      summary: "Start a session on a quiz, or resume the caller's in-progress one",
      description:
        "Creates a session that freezes the quiz's current questions (201), or returns the " +
        "caller's in-progress session with its answers (200), with its snapshot either way. An " +
        "in-progress session started more than 7 days ago is deleted first. A quiz without " +
        'questions is 400 `failed_precondition`. No body, `{}` or `{"mode":"full"}`: the ' +
        'whole quiz. `{"mode":"review"}`: the caller\'s questions due for review now (at ' +
        "most 20, earliest due first; see `GET /quizzes/{quiz_id}/review`), or 400 " +
        '`failed_precondition` with `next_due_at` when none is. `{"mode":"missed"}`: the ' +
        "questions the caller did not answer correctly (wrong or unanswered) in their latest " +
        "completed session of the quiz, in quiz order, or 400 `failed_precondition` when there " +
        "are none. An in-progress session of any mode is resumed all the same.",
      response: {
        201: {
          ...json("A new session, with no answers.", SessionDetail),
          headers: {
            Location: Type.String({
              format: "uri-reference",
              description: "The new session: `/sessions/{id}`, or `/api/sessions/{id}` under /api.",
            }),
          },
        },
        200: json("The caller's in-progress session, with its answers so far.", SessionDetail),
        400: {
          description:
            "The quiz has no questions, a review start finds nothing due (`next_due_at`), a " +
            "missed start finds nothing missed, or the body is not empty or a JSON object with " +
            "a valid `mode` and no other field (`errors` names each field that is wrong).",
          content: {
            "application/problem+json": {
              schema: Type.Union([NothingDueProblem, Problem]),
              examples: {
                noQuestions: problemExample(
                  400,
                  "failed_precondition",
                  "quiz has no questions to practise",
                ),
                nothingDue: {
                  value: {
                    ...problemExample(
                      400,
                      "failed_precondition",
                      "no question of this quiz is due for review yet",
                    ).value,
                    next_due_at: "2026-11-23T09:41:00.000Z",
                  },
                },
                nothingMissed: problemExample(
                  400,
                  "failed_precondition",
                  "nothing to practise again: no question was missed in your latest completed session of this quiz",
                ),
                body: problemExample(
                  400,
                  "invalid_argument",
                  "request body must be empty or a JSON object",
                ),
                mode: problemExample(
                  400,
                  "invalid_argument",
                  'mode must be "full", "review" or "missed"',
                  "mode",
                ),
                unknownField: problemExample(
                  400,
                  "invalid_argument",
                  "unknown field Mode: did you mean mode?",
                  "Mode",
                ),
              },
            },
          },
        },
        415: unsupportedMediaType,
      },
    }),
    getSession: onSession({
      ...requestSchemasOf.getSession,
      summary: "One of the caller's sessions, with its answers and snapshot",
      description:
        "Anchored on the session id alone: works after the quiz or its study guide is deleted. " +
        "Once the session is completed, each snapshot question carries its current " +
        "`correct_answer` (null for a deleted question), for review; null while in progress.",
      response: { 200: json("The session.", SessionDetail) },
    }),
    submitAnswer: onSession({
      ...requestSchemasOf.submitAnswer,
      summary: "Answer one question of an in-progress session",
      description:
        "The service decides `is_correct` (trimmed, case-insensitive, after Unicode NFC). " +
        "One answer per question, and a retry is safe: the same `user_answer` again, byte for " +
        "byte, to a question that has exactly that answer is 200 with the stored answer and " +
        "writes nothing, also after the session is completed; a different answer is 409 " +
        "`already_exists` with the stored answer as `stored_answer`. A new answer to a " +
        "completed or expired session is 400 `failed_precondition`.",
      response: {
        201: json("The stored answer and the session's new counts.", AnswerResult),
        200: json(
          "The question had exactly this answer already (a retry): the stored answer and the " +
            "session's counts, nothing written.",
          AnswerResult,
        ),
        400: problems(
          400,
          "A bad answer, a question outside the session, or a new answer to a completed or " +
            "expired session; `errors` names each field that is wrong.",
          {
            answer: [
              "invalid_argument",
              "user_answer must be 1 to 1000 characters and not only white space",
              "user_answer",
            ],
            question: [
              "invalid_argument",
              "question_id is not a question of this session",
              "question_id",
            ],
            unicode: ["invalid_argument", "user_answer is not well-formed Unicode", "user_answer"],
            unknownField: [
              "invalid_argument",
              "unknown field questionId: did you mean question_id?",
              "questionId",
            ],
            completed,
            expired,
          },
        ),
        409: {
          description:
            "The question has another answer in this session, which stands: `stored_answer`.",
          content: {
            "application/problem+json": {
              schema: AnswerConflictProblem,
              examples: {
                conflict: {
                  value: {
                    type: "about:blank",
                    title: meaningOfName("already_exists").title,
                    status: 409,
                    detail: "question already answered in this session",
                    code: "already_exists",
                    stored_answer: {
                      question_id: "42",
                      user_answer: "Paris",
                      is_correct: true,
                      answered_at: "2026-11-22T02:13:10.123Z",
                    },
                  },
                },
              },
            },
          },
        },
        415: unsupportedMediaType,
      },
    }),
    completeSession: onSession({
      ...requestSchemasOf.completeSession,
      summary: "Complete an in-progress session",
      description:
        "Sets completed_at and so the score. Completing a completed session again is a retry: " +
        "200 with the session as it is (the same completed_at and score), nothing written. An " +
        "expired session (in progress, started over 7 days ago) is 400 `failed_precondition`. " +
        "No body, or an empty JSON object.",
      response: {
        200: json(
          "The completed session with its answers: completed now, or before (a retry).",
          Session,
        ),
        400: problems(400, "The session expired, or the body is not empty or `{}`.", {
          expired,
          body: ["invalid_argument", "request body must be empty or a JSON object"],
          unknownField: ["invalid_argument", "unknown field mode", "mode"],
        }),
        415: unsupportedMediaType,
      },
    }),
  },
);

export const { listDueQuestions } = tagged("review", {
  listDueQuestions: onQuiz({
    ...requestSchemasOf.listDueQuestions,
    summary: "The caller's questions of a quiz due for review now",
    description:
      "Spaced repetition over the caller's own answers: every stored answer, in any session, " +
      "schedules its question with FSRS (ts-fsrs 5, default parameters, fuzz off; correct = " +
      "Good, wrong = Again, at `answered_at`; a question left unanswered when a session is " +
      "completed counts as Again at `completed_at`). Due now (`due_at` at or before now), " +
      "earliest due first, then by position, in keyset pages; `due_count` and `new_count` " +
      "(live questions never answered) count the whole quiz; `next_due_at` the earliest due " +
      "time after now. The same 404 as the list.",
    response: {
      200: json("A page of what is due.", DueQuestions),
      400: pageQueryProblems(),
    },
  }),
});
