import type {
  AnswerJson,
  SessionDetailJson,
  SessionJson,
  SummaryJson,
} from "../../src/rest/schemas.js";
import type { InProcessService, RestInit } from "./in-process.js";

/** An error body (problem+json); absent fields on a success body read as undefined. */
export type ProblemJson = {
  type: string;
  title: string;
  status: number;
  code: string;
  detail: string;
  /** A 409 of an answer: the answer that stands. */
  stored_answer?: AnswerJson;
};

/**
 * The REST calls of a session's life, through `app.inject()` on the
 * in-process service `service()` returns (read at call time: the suites
 * start it in `beforeAll`). Bodies are parsed as JSON, typed as the success
 * shape merged with a problem's fields.
 */
export function restCalls(service: () => InProcessService) {
  async function rest<T>(user: string, method: string, path: string, body?: unknown) {
    const init: RestInit =
      body === undefined
        ? {}
        : { body: JSON.stringify(body), headers: { "content-type": "application/json" } };
    const res = await service().rest(user, method, path, init);
    return {
      status: res.status,
      headers: res.headers,
      body: (await res.json()) as T & ProblemJson,
    };
  }
  return {
    rest,
    /** A start with its Location header beside the body. */
    startWithLocation: async (user: string, quizId: string) => {
      const res = await service().rest(user, "POST", `/quizzes/${quizId}/sessions`);
      const body = (await res.json()) as SessionDetailJson;
      return { status: res.status, location: res.headers.get("location"), body };
    },
    start: (user: string, quizId: string) =>
      rest<SessionDetailJson>(user, "POST", `/quizzes/${quizId}/sessions`),
    answer: (user: string, sessionId: string, questionId: string, userAnswer: string) =>
      rest<{ answer: AnswerJson; session: SummaryJson }>(
        user,
        "POST",
        `/sessions/${sessionId}/answers`,
        { question_id: questionId, user_answer: userAnswer },
      ),
    /** Through the `/api` prefix, which serves the same routes. */
    complete: (user: string, sessionId: string) =>
      rest<SessionJson>(user, "POST", `/api/sessions/${sessionId}/complete`),
    get: (user: string, sessionId: string) =>
      rest<SessionDetailJson>(user, "GET", `/sessions/${sessionId}`),
  };
}
