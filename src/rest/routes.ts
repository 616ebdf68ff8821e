import { isUtf8 } from "node:buffer";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { errors } from "../app/errors.js";
import type { PracticeSessions } from "../app/practice-sessions.js";
import type { Quizzes } from "../app/quizzes.js";
import type { App } from "../app-server.js";
import { modeOf, pageSizeOf, statusOf } from "../contract/request-values.js";
import { type ApiCallOptions, apiCalls } from "../edge/api-calls.js";
import type { Call } from "../edge/call.js";
import {
  answerToJson,
  dueQuestionsToJson,
  quizToJson,
  sessionDetailToJson,
  sessionToJson,
  summaryToJson,
} from "./json.js";
import * as operations from "./operations.js";
import { listQuizzes, quizPageToJson } from "./quiz-list.js";
import { requests } from "./requests.js";
import { readRequest } from "./rest-requests.js";
import { SharedAnswers } from "./shared-answers.js";

/** What Fastify's serializer says of the JSON it writes, said of JSON written ahead. */
const JSON_TYPE = "application/json; charset=utf-8";

export interface RestOptions {
  sessions: PracticeSessions;
  quizzes: Quizzes;
  /** What every API call gets at the edge: deadline, caller, door (edge/api-calls.ts). */
  edge: ApiCallOptions;
  /**
   * Leave these routes out of /openapi.json: "/api" serves the same
   * operations, and the document names it as a second server instead.
   */
  hidden?: boolean;
}

/**
 * The REST gateway: the spec's paths over the same use cases as the RPCs,
 * each route typed and validated by its schema (rest/operations.ts). Register
 * once per prefix ("" and "/api") in a scope of its own: the Connect plugin
 * replaces the content-type parsers of its scope.
 */
export async function restRoutes(
  fastify: App,
  { sessions, quizzes, edge, hidden = false }: RestOptions,
) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  // The call's deadline and signal, its caller (request.userId) and the door, before the body.
  apiCalls(fastify, edge);
  // One answer per call: past its deadline the edge has answered it, and what
  // the handler ends with then (its stopped work's error) is not sent again.
  fastify.addHook("onRoute", (route) => {
    const handler = route.handler;
    route.handler = async function answeredOnce(request, reply) {
      try {
        const result = await handler.call(this, request, reply);
        return reply.sent ? reply : result;
      } catch (err) {
        if (reply.sent) return reply;
        throw err;
      }
    };
  });
  // The route schemas describe (OpenAPI) and serialize; requests are read and checked by the
  // one validation step of every transport (rest-requests.ts), so Fastify's validator passes all.
  const route = { validatorCompiler: () => () => true };
  const schema = <S extends object>(s: S) => ({ ...s, hide: hidden });
  // An empty body means "no options" too (Fastify's parser refuses it). Any
  // other content type, text/plain included, is 415 naming the one to send.
  app.removeAllContentTypeParsers();
  // Read as bytes: decoding to a string would put U+FFFD in place of bytes
  // that are not UTF-8, and the service would store what was never sent.
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (_req, body, done) => {
    const bytes = body as Buffer;
    if (bytes.length === 0) return done(null, undefined);
    if (!isUtf8(bytes)) {
      return done(errors.invalidArgument("request body is not UTF-8 text"), undefined);
    }
    try {
      done(null, JSON.parse(bytes.toString("utf8")));
    } catch {
      done(errors.invalidArgument("request body is not valid JSON"), undefined);
    }
  });
  // Each handler's work runs in an admission slot, taken now that the token
  // is verified and the whole body read and valid (readRequest), so a slot counts
  // work, never a slow sender; the work gets the call's signal, and the slot
  // is held until it has stopped (Admission.run).
  const work = <T>(
    request: {
      call: Call | null;
      callerKey: string;
      routeOptions: { config: { procedure?: string } };
    },
    use: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> => {
    const call = request.call as Call;
    const slot = { kind: request.routeOptions.config.procedure ?? "", key: request.callerKey };
    return call.admit(slot, () => use(call.signal));
  };

  app.get("/quizzes", { ...route, schema: schema(listQuizzes) }, async (request) => {
    const { limit, cursor } = readRequest(requests.listQuizzes, request);
    return quizPageToJson(
      await work(request, (signal) =>
        quizzes.listQuizzes(request.userId, { limit: pageSizeOf(limit), cursor }, signal),
      ),
    );
  });

  // A quiz's answer is the largest (some 280 KB at most): calls with equal
  // content share one encoding while any of them is still being sent.
  const quizAnswers = new SharedAnswers();
  app.get(
    "/quizzes/:quiz_id",
    { ...route, schema: schema(operations.getQuiz) },
    async (request, reply) => {
      const { quizId } = readRequest(requests.getQuiz, request);
      const quiz = quizToJson(await work(request, (signal) => quizzes.getQuiz(quizId, signal)));
      reply.type(JSON_TYPE);
      // Written by the route's own serializer; Fastify sends bytes as they stand.
      const bytes = quizAnswers.bytes(quiz.id, quiz, () =>
        Buffer.from(reply.serializeInput(quiz, "200", "application/json") as string),
      );
      return bytes as unknown as typeof quiz;
    },
  );

  app.get(
    "/quizzes/:quiz_id/sessions",
    { ...route, schema: schema(operations.listSessions) },
    async (request) => {
      const { quizId, status, limit, cursor } = readRequest(requests.listSessions, request);
      const page = await work(request, (signal) =>
        sessions.listSessions(
          request.userId,
          { quizId, status: statusOf(status), limit: pageSizeOf(limit), cursor },
          signal,
        ),
      );
      return {
        sessions: page.sessions.map(summaryToJson),
        next_cursor: page.nextCursor,
        has_more: page.hasMore,
      };
    },
  );

  app.post(
    "/quizzes/:quiz_id/sessions",
    { ...route, schema: schema(operations.startSession) },
    async (request, reply) => {
      const { quizId, mode } = readRequest(requests.startSession, request);
      const { session, created, questions } = await work(request, (signal) =>
        sessions.startSession(request.userId, quizId, modeOf(mode), signal),
      );
      const body = sessionDetailToJson(session, session.answers, questions);
      if (!created) return reply.code(200).send(body);
      return reply.code(201).header("location", `${app.prefix}/sessions/${session.id}`).send(body);
    },
  );

  app.get(
    "/quizzes/:quiz_id/review",
    { ...route, schema: schema(operations.listDueQuestions) },
    async (request) => {
      const { quizId, limit, cursor } = readRequest(requests.listDueQuestions, request);
      return dueQuestionsToJson(
        await work(request, (signal) =>
          sessions.listDueQuestions(
            request.userId,
            quizId,
            { limit: pageSizeOf(limit), cursor },
            signal,
          ),
        ),
      );
    },
  );

  app.get("/sessions/:id", { ...route, schema: schema(operations.getSession) }, async (request) => {
    const { sessionId } = readRequest(requests.getSession, request);
    const { session, questions } = await work(request, (signal) =>
      sessions.getSession(request.userId, sessionId, signal),
    );
    return sessionDetailToJson(session, session.answers, questions);
  });

  app.post(
    "/sessions/:id/answers",
    { ...route, schema: schema(operations.submitAnswer) },
    async (request, reply) => {
      const { sessionId, questionId, userAnswer } = readRequest(requests.submitAnswer, request);
      const { answer, session, created } = await work(request, (signal) =>
        sessions.submitAnswer(request.userId, { sessionId, questionId, userAnswer }, signal),
      );
      // 200: the same answer again, a retry that wrote nothing.
      return reply
        .code(created ? 201 : 200)
        .send({ answer: answerToJson(answer), session: summaryToJson(session) });
    },
  );

  app.post(
    "/sessions/:id/complete",
    { ...route, schema: schema(operations.completeSession) },
    async (request) => {
      const { sessionId } = readRequest(requests.completeSession, request);
      const session = await work(request, (signal) =>
        sessions.completeSession(request.userId, sessionId, signal),
      );
      return sessionToJson(session, session.answers);
    },
  );
}
