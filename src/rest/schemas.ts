import { type Static, type TSchema, Type } from "@fastify/type-provider-typebox";
import type { IsoTime } from "../domain/iso-time.js";

/**
 * The REST JSON, described once (validation, serialization, types, OpenAPI).
 * Times are RFC 3339 UTC with milliseconds; nullable fields are present as null.
 */

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
const DatabaseId = (description?: string) =>
  Type.String({ pattern: "^[1-9][0-9]*$", ...(description && { description }) });
/** Written only by isoTime (its type says so): rest/serializing.ts writes it unescaped. */
const Time = (description?: string) =>
  Type.Unsafe<IsoTime>(Type.String({ format: "date-time", ...(description && { description }) }));

const Mode = Type.Union([Type.Literal("full"), Type.Literal("review"), Type.Literal("missed")], {
  description:
    "`full`: the quiz's questions at start. `review`: the caller's questions due for " +
    "review at start (at most 20, earliest due first). `missed`: the questions the " +
    "caller did not answer correctly (wrong or unanswered) in their latest completed " +
    "session of the quiz, in quiz order.",
});

const summaryFields = {
  id: Type.String({ format: "uuid", description: "Session id, a UUIDv7." }),
  quiz_id: DatabaseId("The quiz's id: a decimal string."),
  started_at: Time("Lists are ordered by it, newest first."),
  completed_at: nullable(Time("null while the session is in progress.")),
  total_questions: Type.Integer({
    minimum: 0,
    description: "Questions in the session's snapshot, counted at start.",
  }),
  correct_answers: Type.Integer({ minimum: 0 }),
  score_percentage: nullable(
    Type.Integer({
      minimum: 0,
      maximum: 100,
      description:
        "round(correct_answers / total_questions * 100) once completed; null while in progress.",
    }),
  ),
  answered_questions: Type.Integer({
    minimum: 0,
    description: "How many answers the session holds so far.",
  }),
  expires_at: nullable(
    Time(
      "started_at + 7 days while in progress: after it, answers and completion are 400 " +
        "`failed_precondition` and the next start replaces the session. null once completed.",
    ),
  ),
  mode: Mode,
};

/** A session without its answers: an item of a list page. */
export const SessionSummary = Type.Object(summaryFields, {
  description: "A session without its answers: an item of a list page.",
});

export const Answer = Type.Object({
  question_id: nullable(DatabaseId("null once the question has been deleted from the quiz.")),
  user_answer: nullable(Type.String()),
  is_correct: nullable(Type.Boolean()),
  answered_at: Time(),
});

export const SnapshotQuestion = Type.Object({
  position: Type.Integer({ minimum: 1 }),
  question_id: nullable(DatabaseId("null once the question has been deleted from the quiz.")),
  correct_answer: nullable(
    Type.String({
      description:
        "For review: the question's current correct answer once the session is completed " +
        "(GET /sessions/{id}); null while in progress and for a deleted question.",
    }),
  ),
});

/** A session with its answers, oldest first. */
export const Session = Type.Object(
  { ...summaryFields, answers: Type.Array(Answer) },
  { description: "A session with every answer so far, oldest first." },
);

/** A session with its answers, oldest first, and its snapshot. */
export const SessionDetail = Type.Object(
  {
    ...summaryFields,
    answers: Type.Array(Answer),
    questions: Type.Array(SnapshotQuestion, {
      description: "The snapshot frozen at start, by position: the questions to answer.",
    }),
  },
  { description: "A session with its answers, oldest first, and its snapshot." },
);

export const SessionPage = Type.Object({
  sessions: Type.Array(SessionSummary),
  next_cursor: nullable(
    Type.String({
      pattern: "^[A-Za-z0-9_-]+$",
      description: "Opaque; pass it as `cursor` for the next page. null on the last page.",
    }),
  ),
  has_more: Type.Boolean({ description: "false on the last page." }),
});

export const AnswerResult = Type.Object({ answer: Answer, session: SessionSummary });

export const Quiz = Type.Object(
  {
    id: DatabaseId(),
    study_guide_id: DatabaseId(),
    title: Type.String(),
    questions: Type.Array(
      Type.Object({
        id: DatabaseId("The question_id to answer with."),
        position: Type.Integer({ minimum: 1, description: "1-based order in the quiz." }),
        prompt: Type.String(),
      }),
      { description: "By position." },
    ),
  },
  { description: "A quiz's content: never a correct answer." },
);

const problemFields = {
  type: Type.String({ format: "uri-reference" }),
  title: Type.String({ description: "The HTTP status text." }),
  status: Type.Integer({ minimum: 400, maximum: 599 }),
  detail: Type.String({ description: "What went wrong; never a stack trace or SQL." }),
  code: Type.String({
    description:
      "Connect error code: `invalid_argument`, `failed_precondition`, `unauthenticated`, " +
      "`not_found`, `unavailable`, ... The HTTP status follows Connect's code-to-HTTP table.",
  }),
};

export const DueQuestion = Type.Object({
  question_id: DatabaseId(),
  position: Type.Integer({ minimum: 1, description: "1-based order in the quiz now." }),
  due_at: Time("When the question falls due for review (FSRS)."),
  last_answered_at: Time("When the caller last answered it, in any session."),
  last_correct: Type.Boolean({ description: "Whether that last answer was correct." }),
  reps: Type.Integer({ minimum: 0, description: "Answers to it so far (FSRS reps)." }),
  lapses: Type.Integer({
    minimum: 0,
    description: "Wrong answers once it had been learned (FSRS lapses).",
  }),
});

/** GET /quizzes/{quiz_id}/review. */
export const DueQuestions = Type.Object(
  {
    questions: Type.Array(DueQuestion, {
      description: "This page of what is due now: earliest due first, then by position.",
    }),
    due_count: Type.Integer({
      minimum: 0,
      description: "Questions due now, on every page (the whole quiz).",
    }),
    new_count: Type.Integer({
      minimum: 0,
      description: "Live questions of the quiz the caller never answered.",
    }),
    next_due_at: nullable(
      Time("The earliest due time after now; null when no answered question falls due later."),
    ),
    next_cursor: nullable(
      Type.String({
        pattern: "^[A-Za-z0-9_-]+$",
        description: "Opaque; pass it as `cursor` for the next page. null on the last page.",
      }),
    ),
  },
  {
    description: "A page of the caller's questions of the quiz due for review (spaced repetition).",
  },
);

/** RFC 9457 problem details, plus `code`, the Connect error code, and for a request that is not valid `errors`. */
export const Problem = Type.Object(
  {
    ...problemFields,
    errors: Type.Optional(
      Type.Array(
        Type.Object({
          field: Type.String({
            description:
              "The field as the operation names it (snake_case): a path parameter, a query " +
              "parameter or a body field, or the unknown body field as it was sent.",
          }),
          message: Type.String({ description: "What is wrong with it." }),
        }),
        {
          description:
            "`invalid_argument`: every field of the request that is wrong, in the order of the " +
            "request's fields; `detail` is the first one's message. Absent when the request as " +
            "a whole is refused (a body that is not a JSON object, say).",
        },
      ),
    ),
  },
  {
    description:
      "RFC 9457 problem details, plus `code`, the Connect error code, and `errors` for a request " +
      "that is not valid.",
  },
);

/** The 409 of an answer: the problem, plus the answer that stands. */
export const AnswerConflictProblem = Type.Object(
  {
    ...problemFields,
    stored_answer: Type.Object(Answer.properties, {
      description:
        "The answer the question has in this session, which stands: a client can show it.",
    }),
  },
  {
    description:
      "RFC 9457 problem details with `code` `already_exists` and the stored answer " +
      "(an extension member).",
  },
);

/** The 400 of a review start with nothing due: the problem, plus when the next question is. */
export const NothingDueProblem = Type.Object(
  {
    ...problemFields,
    next_due_at: nullable(
      Time("When the next question falls due; null when the caller has answered none yet."),
    ),
  },
  {
    description:
      "RFC 9457 problem details with `code` `failed_precondition` and `next_due_at` " +
      "(an extension member).",
  },
);

export type SessionSummaryJson = Static<typeof SessionSummary>;
export type AnswerJson = Static<typeof Answer>;
export type SnapshotQuestionJson = Static<typeof SnapshotQuestion>;
export type SessionJson = Static<typeof Session>;
export type SessionDetailJson = Static<typeof SessionDetail>;
export type SessionPageJson = Static<typeof SessionPage>;
export type QuizJson = Static<typeof Quiz>;
export type DueQuestionsJson = Static<typeof DueQuestions>;
export type ProblemJson = Static<typeof Problem>;
/** Names the tests use. */
export type SummaryJson = SessionSummaryJson;
export type PageJson = SessionPageJson;
