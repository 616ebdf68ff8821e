import type { FastifyInstance } from "fastify";
// Types only (erased at run time), so a devDependency is enough.
import type { ExampleObject, OpenAPIObject, ResponseObject, SchemaObject } from "openapi3-ts/oas31";
import { encodeCursor } from "../domain/cursor.js";

/**
 * OpenAPI 3.1 description of the REST gateway (src/rest/routes.ts), served at
 * GET /openapi.json. test/integration/openapi.test.ts keeps it in step: every
 * REST route is documented, every documented operation exists, every example
 * validates, and real responses validate against the documented schemas.
 *
 * The "/api" prefix is a second server, not a second copy of every path: a
 * client generator then makes one method per operation (one operationId), and
 * the prefix is the base URL the client is configured with.
 *
 * To add an operation: add its path below and point its responses at the
 * shared schemas and error responses (`responses.*`).
 */

const ref = (kind: "schemas" | "responses" | "parameters" | "headers", name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

const SESSION_ID = "0199f3c2-5b1e-7c3a-9d4e-2f6a8b0c1d2e";
const STARTED_AT = "2026-11-22T02:13:10.123Z";

// ---- Schemas -----------------------------------------------------------------

/** Fields of every session shape: the list summary and the start/resume session. */
const sessionSummaryProperties: Record<string, SchemaObject> = {
  id: { type: "string", format: "uuid", description: "Session id, a UUIDv7." },
  quiz_id: {
    type: "string",
    pattern: "^[1-9][0-9]*$",
    description: "The quiz's id: a decimal string.",
  },
  started_at: {
    type: "string",
    format: "date-time",
    description: "RFC 3339 UTC with milliseconds. Lists are ordered by it, newest first.",
  },
  completed_at: {
    type: ["string", "null"],
    format: "date-time",
    description: "null while the session is in progress.",
  },
  total_questions: {
    type: "integer",
    minimum: 0,
    description: "Questions in the session's snapshot, counted at start.",
  },
  correct_answers: { type: "integer", minimum: 0 },
  score_percentage: {
    type: ["integer", "null"],
    minimum: 0,
    maximum: 100,
    description:
      "round(correct_answers / total_questions * 100) once completed; null while in progress.",
  },
  answered_questions: {
    type: "integer",
    minimum: 0,
    description: "How many answers the session holds so far.",
  },
  expires_at: {
    type: ["string", "null"],
    format: "date-time",
    description:
      "started_at + 7 days while in progress: after it, answers and completion are 400 " +
      "`failed_precondition` and the next start replaces the session. null once completed.",
  },
};
const sessionSummaryRequired = Object.keys(sessionSummaryProperties);

const schemas: Record<string, SchemaObject> = {
  SessionSummary: {
    type: "object",
    description: "A session without its answers: an item of a list page.",
    required: sessionSummaryRequired,
    properties: sessionSummaryProperties,
  },
  Session: {
    type: "object",
    description: "A session with every answer so far, oldest first.",
    required: [...sessionSummaryRequired, "answers"],
    properties: {
      ...sessionSummaryProperties,
      answers: { type: "array", items: ref("schemas", "Answer") },
    },
  },
  Answer: {
    type: "object",
    required: ["question_id", "user_answer", "is_correct", "answered_at"],
    properties: {
      question_id: {
        type: ["string", "null"],
        pattern: "^[1-9][0-9]*$",
        description: "null once the question has been deleted from the quiz.",
      },
      user_answer: { type: ["string", "null"] },
      is_correct: { type: ["boolean", "null"] },
      answered_at: { type: "string", format: "date-time" },
    },
  },
  SessionDetail: {
    type: "object",
    description: "A session with its answers, oldest first, and its snapshot.",
    required: [...sessionSummaryRequired, "answers", "questions"],
    properties: {
      ...sessionSummaryProperties,
      answers: { type: "array", items: ref("schemas", "Answer") },
      questions: {
        type: "array",
        description: "The snapshot frozen at start, by position: the questions to answer.",
        items: ref("schemas", "SnapshotQuestion"),
      },
    },
  },
  SnapshotQuestion: {
    type: "object",
    required: ["position", "question_id", "correct_answer"],
    properties: {
      position: { type: "integer", minimum: 1 },
      question_id: {
        type: ["string", "null"],
        pattern: "^[1-9][0-9]*$",
        description: "null once the question has been deleted from the quiz.",
      },
      correct_answer: {
        type: ["string", "null"],
        description:
          "For review: the question's current correct answer once the session is completed " +
          "(GET /sessions/{id}); null while in progress and for a deleted question.",
      },
    },
  },
  Quiz: {
    type: "object",
    description: "A quiz's content: never a correct answer.",
    required: ["id", "study_guide_id", "title", "questions"],
    properties: {
      id: { type: "string", pattern: "^[1-9][0-9]*$" },
      study_guide_id: { type: "string", pattern: "^[1-9][0-9]*$" },
      title: { type: "string" },
      questions: {
        type: "array",
        description: "By position.",
        items: {
          type: "object",
          required: ["id", "position", "prompt"],
          properties: {
            id: {
              type: "string",
              pattern: "^[1-9][0-9]*$",
              description: "The question_id to answer with.",
            },
            position: { type: "integer", minimum: 1, description: "1-based order in the quiz." },
            prompt: { type: "string" },
          },
        },
      },
    },
  },
  NewAnswer: {
    type: "object",
    required: ["question_id", "user_answer"],
    properties: {
      question_id: { type: "string", description: "A question of the session's snapshot." },
      user_answer: {
        type: "string",
        minLength: 1,
        maxLength: 1000,
        description: "1 to 1,000 characters, not only white space; stored as sent.",
      },
    },
  },
  AnswerResult: {
    type: "object",
    required: ["answer", "session"],
    properties: {
      answer: ref("schemas", "Answer"),
      session: ref("schemas", "SessionSummary"),
    },
  },
  SessionPage: {
    type: "object",
    required: ["sessions", "next_cursor", "has_more"],
    properties: {
      sessions: { type: "array", items: ref("schemas", "SessionSummary") },
      next_cursor: {
        type: ["string", "null"],
        pattern: "^[A-Za-z0-9_-]+$",
        description: "Opaque; pass it as `cursor` for the next page. null on the last page.",
      },
      has_more: { type: "boolean", description: "false on the last page." },
    },
  },
  Problem: {
    type: "object",
    description: "RFC 9457 problem details, plus `code`, the Connect error code.",
    required: ["type", "title", "status", "detail", "code"],
    properties: {
      type: { type: "string", format: "uri-reference", examples: ["about:blank"] },
      title: { type: "string", description: "The HTTP status text." },
      status: { type: "integer", minimum: 400, maximum: 599 },
      detail: { type: "string", description: "What went wrong; never a stack trace or SQL." },
      code: {
        type: "string",
        description:
          "Connect error code: `invalid_argument`, `failed_precondition`, `unauthenticated`, " +
          "`not_found`, `unavailable`, ... The HTTP status follows Connect's code-to-HTTP table.",
        examples: ["not_found"],
      },
    },
  },
};

// ---- Responses -----------------------------------------------------------------

function problemExample(
  status: number,
  title: string,
  code: string,
  detail: string,
  summary: string,
): ExampleObject {
  return { summary, value: { type: "about:blank", title, status, detail, code } };
}

function problemResponse(
  description: string,
  examples: Record<string, ExampleObject>,
  headers?: ResponseObject["headers"],
): ResponseObject {
  return {
    description,
    ...(headers && { headers }),
    content: { "application/problem+json": { schema: ref("schemas", "Problem"), examples } },
  };
}

/** Shared error responses: every operation has these (400s differ per operation). */
const responses: Record<string, ResponseObject> = {
  Unauthorized: problemResponse(
    "No bearer token, or one that is malformed, expired, not yet valid or wrongly signed.",
    {
      missing: problemExample(
        401,
        "Unauthorized",
        "unauthenticated",
        "missing or invalid bearer token",
        "no token",
      ),
      expired: problemExample(
        401,
        "Unauthorized",
        "unauthenticated",
        "bearer token expired: get a new token",
        "an expired token",
      ),
    },
    { "WWW-Authenticate": ref("headers", "WwwAuthenticate") },
  ),
  NotFound: problemResponse(
    "The quiz does not exist, is deleted, or is under a deleted study guide (one body for all).",
    {
      quiz: problemExample(404, "Not Found", "not_found", "quiz not found", "no such live quiz"),
    },
  ),
  SessionNotFound: problemResponse(
    "No such session of the caller's: another user's, unknown or malformed (one body for all).",
    {
      session: problemExample(
        404,
        "Not Found",
        "not_found",
        "session not found",
        "no such session",
      ),
    },
  ),
  UnsupportedMediaType: problemResponse(
    "A body sent with another content type than application/json (or with none).",
    {
      text: problemExample(
        415,
        "Unsupported Media Type",
        "invalid_argument",
        "a request body must be JSON, sent with content-type: application/json",
        "a text/plain body",
      ),
    },
  ),
  Unavailable: problemResponse("The database is unreachable; retry later.", {
    database: problemExample(
      503,
      "Service Unavailable",
      "unavailable",
      "service temporarily unavailable, try again",
      "database down",
    ),
  }),
};

// ---- Examples ----------------------------------------------------------------------

const inProgress = {
  id: SESSION_ID,
  quiz_id: "1",
  started_at: STARTED_AT,
  completed_at: null,
  total_questions: 4,
  correct_answers: 1,
  score_percentage: null,
  answered_questions: 2,
  expires_at: "2026-11-29T02:13:10.123Z",
};
const completed = {
  id: "0199e1a0-0c4d-7f21-8b3a-5d6e7f809a1b",
  quiz_id: "1",
  started_at: "2026-11-20T09:00:00.000Z",
  completed_at: "2026-11-20T09:07:42.518Z",
  total_questions: 4,
  correct_answers: 3,
  score_percentage: 75,
  answered_questions: 4,
  expires_at: null,
};
const snapshot = [
  { position: 1, question_id: "11", correct_answer: null },
  { position: 2, question_id: "12", correct_answer: null },
  { position: 3, question_id: "13", correct_answer: null },
  { position: 4, question_id: "14", correct_answer: null },
];

// ---- The document ----------------------------------------------------------------

const commonErrors = {
  "401": ref("responses", "Unauthorized"),
  "404": ref("responses", "NotFound"),
  "503": ref("responses", "Unavailable"),
};

const sessionErrors = {
  "401": ref("responses", "Unauthorized"),
  "404": ref("responses", "SessionNotFound"),
  "503": ref("responses", "Unavailable"),
};

const completedExample = problemExample(
  400,
  "Bad Request",
  "failed_precondition",
  "session is already completed",
  "the session is completed",
);

const expiredExample = problemExample(
  400,
  "Bad Request",
  "failed_precondition",
  "session expired: it was started more than 7 days ago; start the quiz again for a new session",
  "the session expired (in progress, started over 7 days ago)",
);

const listBadRequest = problemResponse("A query parameter is not valid.", {
  limit: problemExample(
    400,
    "Bad Request",
    "invalid_argument",
    "limit must be an integer from 1 to 100",
    "limit out of range",
  ),
  status: problemExample(
    400,
    "Bad Request",
    "invalid_argument",
    'status must be "active" or "completed"',
    "unknown status",
  ),
  cursor: problemExample(
    400,
    "Bad Request",
    "invalid_argument",
    "cursor is not a next_cursor this service returned",
    "a cursor the service did not make",
  ),
});

const startBadRequest = problemResponse(
  "The quiz has no questions, or the body is not empty or a JSON object.",
  {
    noQuestions: problemExample(
      400,
      "Bad Request",
      "failed_precondition",
      "quiz has no questions to practise",
      "the quiz has no questions",
    ),
    body: problemExample(
      400,
      "Bad Request",
      "invalid_argument",
      "request body must be empty or a JSON object",
      "a body that is not a JSON object",
    ),
  },
);

export const openApiDocument: OpenAPIObject = {
  openapi: "3.1.1",
  info: {
    title: "Practice sessions (REST gateway)",
    version: "0.1.0",
    description:
      "The REST/JSON face of `practice.v1.PracticeSessionService` and `practice.v1.QuizService`. The same operations are " +
      "served over gRPC, Connect and gRPC-Web on the same port. JSON names are snake_case; " +
      "times are RFC 3339 UTC with milliseconds; nullable fields are present as null.",
  },
  servers: [
    { url: "/", description: "Paths at the root." },
    {
      url: "/api",
      description: "The same paths under /api (a 201's Location is then under /api too).",
    },
  ],
  security: [{ bearerAuth: [] }],
  tags: [
    { name: "sessions", description: "Practice sessions on a quiz." },
    { name: "quizzes", description: "Quiz content." },
  ],
  paths: {
    "/quizzes/{quiz_id}": {
      parameters: [ref("parameters", "QuizId")],
      get: {
        operationId: "getQuiz",
        tags: ["quizzes"],
        summary: "A quiz's title and questions, by position, without correct answers",
        description:
          "A live quiz on a live study guide. Missing, deleted, or under a deleted study guide: " +
          "the same 404 as the list.",
        responses: {
          "200": {
            description: "The quiz.",
            content: {
              "application/json": {
                schema: ref("schemas", "Quiz"),
                examples: {
                  capitals: {
                    summary: "A quiz of two questions",
                    value: {
                      id: "1",
                      study_guide_id: "1",
                      title: "Capitals",
                      questions: [
                        { id: "11", position: 1, prompt: "Capital of France?" },
                        { id: "12", position: 2, prompt: "Capital of Japan?" },
                      ],
                    },
                  },
                },
              },
            },
          },
          ...commonErrors,
        },
      },
    },
    "/quizzes/{quiz_id}/sessions": {
      parameters: [ref("parameters", "QuizId")],
      get: {
        operationId: "listSessions",
        tags: ["sessions"],
        summary: "List the caller's sessions on a quiz, newest first",
        description:
          "Ordered by started_at descending, then id descending; keyset pages. Only the " +
          "caller's own sessions. Each query parameter may be given at most once.",
        parameters: [
          ref("parameters", "Status"),
          ref("parameters", "Limit"),
          ref("parameters", "Cursor"),
        ],
        responses: {
          "200": {
            description: "A page of sessions.",
            content: {
              "application/json": {
                schema: ref("schemas", "SessionPage"),
                examples: {
                  page: {
                    summary: "A first page with more to come",
                    value: {
                      sessions: [inProgress, completed],
                      next_cursor: encodeCursor({
                        startedAt: new Date(completed.started_at),
                        id: completed.id,
                      }),
                      has_more: true,
                    },
                  },
                  last: {
                    summary: "The last page",
                    value: { sessions: [completed], next_cursor: null, has_more: false },
                  },
                },
              },
            },
          },
          "400": listBadRequest,
          ...commonErrors,
        },
      },
      post: {
        operationId: "startSession",
        tags: ["sessions"],
        summary: "Start a session on a quiz, or resume the caller's in-progress one",
        description:
          "Creates a session that freezes the quiz's current questions (201), or returns the " +
          "caller's in-progress session with its answers (200). An in-progress session started " +
          "more than 7 days ago is deleted first. A quiz without questions is 400 " +
          "`failed_precondition`.",
        requestBody: {
          required: false,
          description: "No body, or an empty JSON object: there are no options yet.",
          content: {
            "application/json": {
              schema: { type: "object" },
              examples: { empty: { summary: "No options", value: {} } },
            },
          },
        },
        responses: {
          "201": {
            description: "A new session, with no answers.",
            headers: { Location: ref("headers", "SessionLocation") },
            content: {
              "application/json": {
                schema: ref("schemas", "SessionDetail"),
                examples: {
                  created: {
                    summary: "Created",
                    value: {
                      ...inProgress,
                      correct_answers: 0,
                      answered_questions: 0,
                      answers: [],
                      questions: snapshot,
                    },
                  },
                },
              },
            },
          },
          "200": {
            description: "The caller's in-progress session, resumed, with its answers so far.",
            content: {
              "application/json": {
                schema: ref("schemas", "SessionDetail"),
                examples: {
                  resumed: {
                    summary: "Resumed after two answers, one of a since-deleted question",
                    value: {
                      ...inProgress,
                      answers: [
                        {
                          question_id: null,
                          user_answer: "Paris",
                          is_correct: true,
                          answered_at: "2026-11-22T02:13:31.004Z",
                        },
                        {
                          question_id: "12",
                          user_answer: "7",
                          is_correct: false,
                          answered_at: "2026-11-22T02:14:02.250Z",
                        },
                      ],
                      questions: [
                        { position: 1, question_id: null, correct_answer: null },
                        ...snapshot.slice(1),
                      ],
                    },
                  },
                },
              },
            },
          },
          "400": startBadRequest,
          "415": ref("responses", "UnsupportedMediaType"),
          ...commonErrors,
        },
      },
    },
    "/sessions/{id}": {
      parameters: [ref("parameters", "SessionId")],
      get: {
        operationId: "getSession",
        tags: ["sessions"],
        summary: "One of the caller's sessions, with its answers and snapshot",
        description:
          "Anchored on the session id alone: works after the quiz or its study guide is deleted. " +
          "Once the session is completed, each snapshot question carries its current " +
          "`correct_answer` (null for a deleted question), for review; null while in progress.",
        responses: {
          "200": {
            description: "The session.",
            content: {
              "application/json": {
                schema: ref("schemas", "SessionDetail"),
                examples: {
                  detail: {
                    summary: "In progress, one question since deleted",
                    value: {
                      ...inProgress,
                      answers: [
                        {
                          question_id: "11",
                          user_answer: "Paris",
                          is_correct: true,
                          answered_at: "2026-11-22T02:13:31.004Z",
                        },
                      ],
                      answered_questions: 1,
                      questions: [
                        { position: 1, question_id: "11", correct_answer: null },
                        { position: 2, question_id: null, correct_answer: null },
                      ],
                    },
                  },
                  review: {
                    summary: "Completed: the review carries each question's correct answer",
                    value: {
                      ...completed,
                      total_questions: 2,
                      correct_answers: 1,
                      score_percentage: 50,
                      answered_questions: 2,
                      answers: [
                        {
                          question_id: "11",
                          user_answer: "Paris",
                          is_correct: true,
                          answered_at: "2026-11-20T09:01:12.004Z",
                        },
                        {
                          question_id: "12",
                          user_answer: "Kyoto",
                          is_correct: false,
                          answered_at: "2026-11-20T09:03:40.250Z",
                        },
                      ],
                      questions: [
                        { position: 1, question_id: "11", correct_answer: "Paris" },
                        { position: 2, question_id: "12", correct_answer: "Tokyo" },
                      ],
                    },
                  },
                },
              },
            },
          },
          ...sessionErrors,
        },
      },
    },
    "/sessions/{id}/answers": {
      parameters: [ref("parameters", "SessionId")],
      post: {
        operationId: "submitAnswer",
        tags: ["sessions"],
        summary: "Answer one question of an in-progress session",
        description:
          "The service decides `is_correct` (trimmed, case-insensitive). One answer per question.",
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: ref("schemas", "NewAnswer"),
              examples: {
                paris: { summary: "An answer", value: { question_id: "11", user_answer: "Paris" } },
              },
            },
          },
        },
        responses: {
          "201": {
            description: "The stored answer and the session's new counts.",
            content: {
              "application/json": {
                schema: ref("schemas", "AnswerResult"),
                examples: {
                  correct: {
                    summary: "A correct answer",
                    value: {
                      answer: {
                        question_id: "11",
                        user_answer: "Paris",
                        is_correct: true,
                        answered_at: "2026-11-22T02:13:31.004Z",
                      },
                      session: { ...inProgress, correct_answers: 2 },
                    },
                  },
                },
              },
            },
          },
          "400": problemResponse(
            "A bad answer, a question outside the session, or a completed or expired session.",
            {
              answer: problemExample(
                400,
                "Bad Request",
                "invalid_argument",
                "user_answer must be 1 to 1000 characters and not only white space",
                "an empty answer",
              ),
              question: problemExample(
                400,
                "Bad Request",
                "invalid_argument",
                "question_id is not a question of this session",
                "a question outside the snapshot",
              ),
              completed: completedExample,
              expired: expiredExample,
            },
          ),
          "409": problemResponse("The question is answered already in this session.", {
            again: problemExample(
              409,
              "Conflict",
              "already_exists",
              "question already answered in this session",
              "a second answer",
            ),
          }),
          "415": ref("responses", "UnsupportedMediaType"),
          ...sessionErrors,
        },
      },
    },
    "/sessions/{id}/complete": {
      parameters: [ref("parameters", "SessionId")],
      post: {
        operationId: "completeSession",
        tags: ["sessions"],
        summary: "Complete an in-progress session",
        description:
          "Sets completed_at and so the score. Completing twice, or an expired session (in " +
          "progress, started over 7 days ago), is 400 `failed_precondition`.",
        requestBody: {
          required: false,
          description: "No body, or an empty JSON object.",
          content: { "application/json": { schema: { type: "object" } } },
        },
        responses: {
          "200": {
            description: "The completed session with its answers.",
            content: {
              "application/json": {
                schema: ref("schemas", "Session"),
                examples: {
                  completed: { summary: "Completed", value: { ...completed, answers: [] } },
                },
              },
            },
          },
          "400": problemResponse("The session is completed already, or expired.", {
            completed: completedExample,
            expired: expiredExample,
          }),
          "415": ref("responses", "UnsupportedMediaType"),
          ...sessionErrors,
        },
      },
    },
  },
  components: {
    securitySchemes: {
      bearerAuth: {
        type: "http",
        scheme: "bearer",
        bearerFormat: "JWT",
        description: "A JWT whose `sub` is the user id; it must carry `exp`.",
      },
    },
    schemas,
    responses,
    parameters: {
      SessionId: {
        name: "id",
        in: "path",
        required: true,
        description: "The session's id. Another user's, unknown or malformed ids are 404.",
        schema: { type: "string" },
        example: SESSION_ID,
      },
      QuizId: {
        name: "quiz_id",
        in: "path",
        required: true,
        description: "The quiz's id. A value that names no quiz (`abc`, `0`) is 404.",
        schema: { type: "string" },
        example: "1",
      },
      Status: {
        name: "status",
        in: "query",
        required: false,
        description: "Only in-progress (`active`) or only `completed` sessions; both if absent.",
        schema: { type: "string", enum: ["active", "completed"] },
      },
      Limit: {
        name: "limit",
        in: "query",
        required: false,
        description: "Page size.",
        schema: { type: "integer", minimum: 1, maximum: 100, default: 20 },
      },
      Cursor: {
        name: "cursor",
        in: "query",
        required: false,
        description: "`next_cursor` of the previous page; absent or empty for the first page.",
        schema: { type: "string" },
      },
    },
    headers: {
      SessionLocation: {
        description: "The new session: `/sessions/{id}`, or `/api/sessions/{id}` under /api.",
        required: true,
        schema: { type: "string", format: "uri-reference" },
        example: `/sessions/${SESSION_ID}`,
      },
      WwwAuthenticate: {
        required: true,
        description:
          "RFC 6750: `Bearer`, or for an authentic token past its `exp` " +
          '`Bearer error="invalid_token", error_description="The access token expired"`.',
        schema: {
          type: "string",
          enum: [
            "Bearer",
            'Bearer error="invalid_token", error_description="The access token expired"',
          ],
        },
        example: "Bearer",
      },
    },
  },
};

/** Serves the document at GET /openapi.json, with no authentication. */
export async function openApiRoute(app: FastifyInstance) {
  const body = JSON.stringify(openApiDocument);
  app.get("/openapi.json", async (_request, reply) =>
    reply.type("application/json; charset=utf-8").send(body),
  );
}
