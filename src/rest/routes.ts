import { isUtf8 } from "node:buffer";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { errors } from "../app/errors.js";
import type { PracticeSessions } from "../app/practice-sessions.js";
import type { Quizzes } from "../app/quizzes.js";
import type { App } from "../app-server.js";
import type { Authenticator } from "../auth/authenticator.js";
import { type Admission, acquireWithin } from "../ops/admission.js";
import { clientGone } from "../ops/client-gone.js";
import { recordOutcome } from "../ops/outcome.js";
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
import { validationError } from "./validation.js";

export interface RestOptions {
  sessions: PracticeSessions;
  quizzes: Quizzes;
  authenticator: Authenticator;
  /** Longest a request may take: then 504 `deadline_exceeded` (Fastify's handlerTimeout). */
  requestTimeoutMs: number;
  /** Admission control shared with the RPCs. */
  admission: Admission;
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
  { sessions, quizzes, authenticator, requestTimeoutMs, admission, hidden = false }: RestOptions,
) {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  // request.userId is decorated on the root (ops/outcome.ts): the handlers read it.
  const route = { handlerTimeout: requestTimeoutMs, schemaErrorFormatter: validationError };
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
  // The token first: a caller without one never waits for a slot.
  app.addHook("onRequest", async (request) => {
    if (clientGone(request.raw)) throw errors.canceled();
    const userId = await authenticator.authenticate(request.headers.authorization);
    recordOutcome(request, { userId });
  });
  // A POST without a body is a POST of `{}`: then the body schema decides.
  app.addHook("preValidation", async (request) => {
    if (request.method === "POST" && request.body === undefined) request.body = {};
  });

  // Admission last, right before the handler: the token is verified and the
  // whole body read, size-checked and validated, so a slot counts work, never
  // a slow sender. It waits until the route's deadline or until the client
  // leaves; the slot is held until the response is sent or the client leaves.
  // (Fastify's request.signal will not do: on HTTP/1.1 it aborts once the
  // body is read, when Node closes the IncomingMessage.)
  app.addHook("preHandler", async (request, reply) => {
    if (clientGone(request.raw)) throw errors.canceled();
    const left = new AbortController();
    const onClose = () => left.abort();
    reply.raw.once("close", onClose);
    // The route's "METHOD /path" label, made once per route (ops/request-log.ts).
    const kind = request.routeOptions.config.procedure ?? request.url;
    const release = await acquireWithin(admission, left.signal, kind, requestTimeoutMs).finally(
      () => reply.raw.off("close", onClose),
    );
    if (reply.sent || clientGone(request.raw)) {
      release(false);
      throw errors.canceled();
    }
    reply.raw.once("close", () => release(reply.statusCode < 400));
  });

  app.get("/quizzes", { ...route, schema: schema(listQuizzes) }, async (request) => {
    const { limit, cursor } = request.query;
    return quizPageToJson(
      await quizzes.listQuizzes(request.userId, {
        limit: limit === undefined ? undefined : Number(limit),
        cursor,
      }),
    );
  });

  app.get("/quizzes/:quiz_id", { ...route, schema: schema(operations.getQuiz) }, async (request) =>
    quizToJson(await quizzes.getQuiz(request.params.quiz_id)),
  );

  app.get(
    "/quizzes/:quiz_id/sessions",
    { ...route, schema: schema(operations.listSessions) },
    async (request) => {
      const { status, limit, cursor } = request.query;
      const page = await sessions.listSessions(request.userId, {
        quizId: request.params.quiz_id,
        status,
        limit: limit === undefined ? undefined : Number(limit),
        cursor,
      });
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
      const { session, created, questions } = await sessions.startSession(
        request.userId,
        request.params.quiz_id,
        request.body.mode,
      );
      const body = sessionDetailToJson(session, session.answers, questions);
      if (!created) return reply.code(200).send(body);
      return reply.code(201).header("location", `${app.prefix}/sessions/${session.id}`).send(body);
    },
  );

  app.get(
    "/quizzes/:quiz_id/review",
    { ...route, schema: schema(operations.listDueQuestions) },
    async (request) =>
      dueQuestionsToJson(await sessions.listDueQuestions(request.userId, request.params.quiz_id)),
  );

  app.get("/sessions/:id", { ...route, schema: schema(operations.getSession) }, async (request) => {
    const { session, questions } = await sessions.getSession(request.userId, request.params.id);
    return sessionDetailToJson(session, session.answers, questions);
  });

  app.post(
    "/sessions/:id/answers",
    { ...route, schema: schema(operations.submitAnswer) },
    async (request, reply) => {
      const { answer, session, created } = await sessions.submitAnswer(request.userId, {
        sessionId: request.params.id,
        questionId: request.body.question_id,
        userAnswer: request.body.user_answer,
      });
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
      const session = await sessions.completeSession(request.userId, request.params.id);
      return sessionToJson(session, session.answers);
    },
  );
}
