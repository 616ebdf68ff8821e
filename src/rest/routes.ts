import type { FastifyInstance, FastifyRequest } from "fastify";
import type { PracticeSessions } from "../app/practice-sessions.js";
import type { Quizzes } from "../app/quizzes.js";
import type { Authenticator } from "../auth/authenticator.js";
import { errors } from "../domain/errors.js";
import type { SessionStatus } from "../domain/session.js";
import { recordOutcome } from "../ops/outcome.js";
import {
  answerToJson,
  quizToJson,
  sessionDetailToJson,
  sessionToJson,
  summaryToJson,
} from "./to-json.js";

export interface RestOptions {
  sessions: PracticeSessions;
  quizzes: Quizzes;
  authenticator: Authenticator;
  /** Longest a request may take: then 504 `deadline_exceeded` (Fastify's handlerTimeout). */
  requestTimeoutMs: number;
}

type SessionRequest = FastifyRequest<{ Params: { id: string } }>;

type QuizRequest = FastifyRequest<{
  Params: { quiz_id: string };
  Querystring: Record<string, unknown>;
}>;

/**
 * The REST gateway: the spec's paths over the same use cases as the RPCs.
 * Register it once per prefix ("" and "/api"), in a scope of its own: the
 * Connect plugin replaces the content-type parsers of the scope it is in.
 * Errors reach the root's error handler (server.ts), which sends problem+json.
 */
export async function restRoutes(
  app: FastifyInstance,
  { sessions, quizzes, authenticator, requestTimeoutMs }: RestOptions,
) {
  // request.userId is decorated on the root (ops/outcome.ts): the handlers read it.
  const route = { handlerTimeout: requestTimeoutMs };
  // "No body" and "{}" both mean "no options": accept an empty JSON body too,
  // which Fastify's default parser refuses. JSON is the only body read here:
  // any other content type (text/plain included, which Fastify would read as
  // a string) is 415 with a detail that names the one to send (rest/problem.ts).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_req, body, done) => {
    if (body === "") return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(errors.invalidArgument("request body is not valid JSON"), undefined);
    }
  });
  app.addHook("onRequest", async (request) => {
    const userId = await authenticator.authenticate(request.headers.authorization);
    recordOutcome(request, { userId });
  });

  app.get("/quizzes/:quiz_id", route, async (request: QuizRequest) =>
    quizToJson(await quizzes.getQuiz(request.params.quiz_id)),
  );

  app.get("/quizzes/:quiz_id/sessions", route, async (request: QuizRequest) => {
    const query = request.query;
    const page = await sessions.listSessions(request.userId, {
      quizId: request.params.quiz_id,
      status: parseStatus(single(query, "status")),
      limit: parseLimit(single(query, "limit")),
      cursor: single(query, "cursor"),
    });
    return {
      sessions: page.sessions.map(summaryToJson),
      next_cursor: page.nextCursor,
      has_more: page.hasMore,
    };
  });

  app.post("/quizzes/:quiz_id/sessions", route, async (request: QuizRequest, reply) => {
    jsonObjectBody(request.body);
    const { session, created, questions } = await sessions.startSession(
      request.userId,
      request.params.quiz_id,
    );
    if (created) {
      reply.code(201).header("location", `${app.prefix}/sessions/${session.id}`);
    }
    return sessionDetailToJson(session, session.answers, questions);
  });

  app.get("/sessions/:id", route, async (request: SessionRequest) => {
    const { session, questions } = await sessions.getSession(request.userId, request.params.id);
    return sessionDetailToJson(session, session.answers, questions);
  });

  app.post("/sessions/:id/answers", route, async (request: SessionRequest, reply) => {
    const body = jsonObjectBody(request.body);
    const { answer, session } = await sessions.submitAnswer(request.userId, {
      sessionId: request.params.id,
      questionId: stringField(body, "question_id"),
      userAnswer: stringField(body, "user_answer"),
    });
    reply.code(201);
    return { answer: answerToJson(answer), session: summaryToJson(session) };
  });

  app.post("/sessions/:id/complete", route, async (request: SessionRequest) => {
    jsonObjectBody(request.body);
    const session = await sessions.completeSession(request.userId, request.params.id);
    return sessionToJson(session, session.answers);
  });
}

/** The body as an object: a JSON object, or `{}` when there is none. */
function jsonObjectBody(body: unknown): Record<string, unknown> {
  if (body === undefined) return {};
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw errors.invalidArgument("request body must be empty or a JSON object");
  }
  return body as Record<string, unknown>;
}

function stringField(body: Record<string, unknown>, name: string): string {
  const value = body[name];
  if (typeof value !== "string") throw errors.invalidArgument(`${name} must be a string`);
  return value;
}

/** A query parameter given at most once. */
function single(query: Record<string, unknown>, name: string): string | undefined {
  const value = query[name];
  if (value === undefined || typeof value === "string") return value;
  throw errors.invalidArgument(`${name} must be given at most once`);
}

function parseStatus(raw: string | undefined): SessionStatus | undefined {
  if (raw === undefined || raw === "active" || raw === "completed") return raw;
  throw errors.invalidArgument('status must be "active" or "completed"');
}

/** Decimal digits only ("1e2", " 5" and "0x10" are not page sizes); the use case checks the range. */
function parseLimit(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  return /^[0-9]+$/.test(raw) ? Number(raw) : Number.NaN;
}
