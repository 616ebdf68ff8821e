import { type Static, Type } from "@fastify/type-provider-typebox";
import type { QuizPage } from "../app/list-quizzes.js";
import { json, pageQueryProblems, unauthorized, unavailable } from "./operations.js";
import { requestSchemasOf } from "./requests.js";

/** GET /quizzes: the schemas of the quiz list, its operation, and its JSON. */

const Id = (description: string) => Type.String({ pattern: "^[1-9][0-9]*$", description });

export const QuizSummary = Type.Object(
  {
    id: Id("The quiz's id: a decimal string."),
    study_guide_id: Id("Its study guide's id."),
    title: Type.String(),
    question_count: Type.Integer({
      minimum: 0,
      description: "Questions the quiz has now: a session started now freezes them.",
    }),
    in_progress_sessions: Type.Integer({
      minimum: 0,
      description:
        "The caller's sessions on the quiz in progress and not expired (at most one: a start resumes it).",
    }),
    due_count: Type.Integer({
      minimum: 0,
      description:
        "The caller's questions of the quiz due for review now (`GET /quizzes/{quiz_id}/review`).",
    }),
  },
  { description: "A live quiz as a list shows it." },
);

const QuizList = Type.Object({
  quizzes: Type.Array(QuizSummary, { description: "By id." }),
  next_cursor: Type.Union([Type.String({ pattern: "^[1-9][0-9]*$" }), Type.Null()], {
    description: "Pass it as `cursor` for the next page. null on the last page.",
  }),
  has_more: Type.Boolean({ description: "false on the last page." }),
});

export type QuizListJson = Static<typeof QuizList>;

export const listQuizzes = {
  ...requestSchemasOf.listQuizzes,
  operationId: "listQuizzes",
  tags: ["quizzes"],
  summary:
    "List the live quizzes, with the caller's sessions in progress and questions due on each",
  description:
    "Live quizzes on live study guides, by id, in keyset pages; deleted ones are left out. " +
    "Each query parameter may be given at most once.",
  response: {
    200: json("A page of quizzes.", QuizList),
    400: pageQueryProblems(),
    401: unauthorized,
    503: unavailable,
  },
};

export function quizPageToJson(page: QuizPage): QuizListJson {
  return {
    quizzes: page.quizzes.map((q) => ({
      id: q.id,
      study_guide_id: q.studyGuideId,
      title: q.title,
      question_count: q.questionCount,
      in_progress_sessions: q.inProgressSessions,
      due_count: q.dueCount,
    })),
    next_cursor: page.nextCursor,
    has_more: page.hasMore,
  };
}
