import { readFileSync } from "node:fs";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { type FastifyInstance, type FastifyReply, fastify, LogController } from "fastify";
import type { Logger } from "pino";
import { PracticeSessionService } from "../gen/practice/v1/practice_session_service_pb.js";
import { PracticeSessions } from "./app/practice-sessions.js";
import type { Authenticator } from "./auth/authenticator.js";
import type { Db } from "./db/database.js";
import type { Clock } from "./domain/clock.js";
import { errors } from "./domain/errors.js";
import { sendProblem } from "./rest/problem.js";
import { restRoutes } from "./rest/routes.js";
import { authInterceptor } from "./rpc/auth-interceptor.js";
import { practiceSessionService } from "./rpc/practice-session-service.js";

export interface ServerDeps {
  db: Db;
  clock: Clock;
  authenticator: Authenticator;
  logger: Logger;
  /** PEM files: with them the port speaks TLS with ALPN (h2 and http/1.1). */
  tls?: { certFile: string; keyFile: string };
  /** How long Connect waits for in-flight calls when the app closes. */
  shutdownTimeoutMs?: number;
}

/** Largest request body, REST or RPC. The service's requests are a few bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * Responses smaller than this go uncompressed even when the client accepts
 * gzip (grpc-js always does). A page of 100 sessions is about 10 KiB; gzip
 * would spend more CPU than a LAN saves on it.
 */
export const COMPRESS_MIN_BYTES = 64 * 1024;

/**
 * Builds the service's Fastify app: the Connect routes (gRPC, gRPC-Web,
 * Connect) and the REST gateway (at "/" and "/api"). It does not listen:
 * see one-port.ts, which serves it on one port.
 */
export async function buildServer(deps: ServerDeps): Promise<FastifyInstance> {
  const app = fastify({
    http2: true,
    ...(deps.tls && {
      https: {
        allowHTTP1: true,
        cert: readFileSync(deps.tls.certFile),
        key: readFileSync(deps.tls.keyFile),
      },
    }),
    loggerInstance: deps.logger,
    // One log line per failed request is ours to write; Fastify's two per request are off.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: MAX_BODY_BYTES,
    // Quiz ids are at most 20 digits; longer path segments are simply not routes.
    routerOptions: { maxParamLength: 200 },
    return503OnClosing: true,
    // A URL Fastify cannot decode, or a path segment over maxParamLength, is
    // answered before routing; without this Fastify sends its own JSON body
    // (not problem+json) that echoes the path.
    frameworkErrors: (err, request, reply) => {
      if (err.code !== "FST_ERR_MAX_PARAM_LENGTH") {
        sendProblem(
          reply as unknown as FastifyReply,
          errors.invalidArgument("the request URL is not valid"),
        );
        return;
      }
      // Quiz ids are the only long parameters: a too-long one names no quiz.
      const quizPath = /^(\/api)?\/quizzes\//.test(request.url);
      sendProblem(
        reply as unknown as FastifyReply,
        quizPath ? errors.quizNotFound() : errors.routeNotFound(),
      );
    },
  }) as unknown as FastifyInstance;

  const sessions = new PracticeSessions(deps.db, deps.clock);

  // Errors Fastify raises outside the REST scope (an unsupported content type
  // on a Connect path, say) are problem+json too. Set before the scopes that inherit it.
  app.setErrorHandler((err, request, reply) => {
    const sent = sendProblem(reply, err);
    if (reply.statusCode >= 500) request.log.error({ err }, "request failed");
    return sent;
  });
  // The Connect plugin replaces every content-type parser of its scope:
  // register it in its own scope, never wrapped in fastify-plugin.
  await app.register(fastifyConnectPlugin, {
    routes: (router) => router.service(PracticeSessionService, practiceSessionService(sessions)),
    interceptors: [authInterceptor(deps.authenticator)],
    readMaxBytes: MAX_BODY_BYTES,
    compressMinBytes: COMPRESS_MIN_BYTES,
    shutdownTimeoutMs: deps.shutdownTimeoutMs,
  });
  for (const prefix of ["", "/api"]) {
    await app.register(restRoutes, { prefix, sessions, authenticator: deps.authenticator });
  }
  app.setNotFoundHandler((_request, reply) => sendProblem(reply, errors.routeNotFound()));
  await app.ready();
  return app;
}
