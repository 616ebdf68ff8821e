import type { IncomingMessage } from "node:http";
import {
  createServer as createHttp2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from "node:http2";
import type { DescService } from "@bufbuild/protobuf";
import { createContextValues } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { type FastifyBaseLogger, type FastifyRequest, fastify, LogController } from "fastify";
import type { Pool } from "mysql2";
import type { Logger } from "pino";
import { file_grpc_health_v1_health, Health } from "../gen/grpc/health/v1/health_pb.js";
import {
  file_grpc_reflection_v1_reflection,
  ServerReflection,
} from "../gen/grpc/reflection/v1/reflection_pb.js";
import {
  file_grpc_reflection_v1alpha_reflection,
  ServerReflection as ServerReflectionV1alpha,
} from "../gen/grpc/reflection/v1alpha/reflection_pb.js";
import {
  file_practice_v1_practice_session_service,
  PracticeSessionService,
} from "../gen/practice/v1/practice_session_service_pb.js";
import { file_practice_v1_quiz_service, QuizService } from "../gen/practice/v1/quiz_service_pb.js";
import { meaningOfAnswer } from "./app/codes.js";
import { errors } from "./app/errors.js";
import { PracticeSessions } from "./app/practice-sessions.js";
import { Quizzes } from "./app/quizzes.js";
import type { App, AppServer } from "./app-server.js";
import type { Authenticator } from "./auth/authenticator.js";
import type { TrustProxy } from "./config.js";
import type { Db } from "./db/database.js";
import type { ReadRouting } from "./db/read-routing.js";
import type { Clock } from "./domain/clock.js";
import { apiCalls, decorateCalls } from "./edge/api-calls.js";
import { refuseLargeHttp2Head } from "./edge/head-refusals.js";
import { http2ServerOptions } from "./edge/http2-settings.js";
import { COMPRESS_MIN_BYTES, MAX_BODY_BYTES, MAX_PARAM_LENGTH } from "./limits.js";
import type { Admission } from "./ops/admission.js";
import { registerCors } from "./ops/cors.js";
import { failureLog, quietSecondAnswers } from "./ops/failure-log.js";
import { HealthMonitor } from "./ops/health.js";
import { healthService } from "./ops/health-service.js";
import { Metrics } from "./ops/metrics.js";
import { recordOutcome } from "./ops/outcome.js";
import { reflectionRegistry, reflectionServices } from "./ops/reflection-service.js";
import { RefusalPace } from "./ops/refusal-pace.js";
import { observeRequests, RequestLog, requestId } from "./ops/request-log.js";
import { traceRequests } from "./ops/trace-requests.js";
import { SERVICE_VERSION } from "./ops/version.js";
import { MethodNotAllowed, routeMethods } from "./rest/method-not-allowed.js";
import { openApiGenerator, openApiRoute } from "./rest/openapi.js";
import { opsRoutes } from "./rest/ops-routes.js";
import { pathParameterTooLong } from "./rest/requests.js";
import { restRoutes } from "./rest/routes.js";
import { sendProblem } from "./rest/send-problem.js";
import { serializerCompilers } from "./rest/serializing.js";
import { userIdKey } from "./rpc/auth-interceptor.js";
import { callKey } from "./rpc/call-interceptor.js";
import { grpcStreams } from "./rpc/grpc-streams.js";
import { callOutcomeKey, outcomeInterceptor } from "./rpc/outcome-interceptor.js";
import { practiceRpc, type RpcRoutes } from "./rpc/practice-routes.js";
import type { ServedBy } from "./rpc/short-path-call.js";
import {
  connectionKey,
  STREAM_LIMITS,
  type StreamLimits,
  streamLimitsInterceptor,
} from "./rpc/stream-limits.js";
import { STRICT_JSON_OPTIONS } from "./rpc/strict-json.js";
import { unaryShortPathConstraint, unaryShortPathRoutes } from "./rpc/unary-short-path.js";
import { homePageRoutes } from "./web/home-page.js";
import { type PracticePageFiles, practicePageRoutes } from "./web/practice-page.js";

export interface AppDeps {
  db: Db;
  clock: Clock;
  authenticator: Authenticator;
  logger: Logger;
  /** Health state, shared with shutdown (which drains it). Default: a new one on `db`. */
  health?: HealthMonitor;
  /** The pool under `db`, for pool metrics. */
  pool?: Pool;
  /** The /metrics registry, shared with the outbox relay. Default: a new one on `pool`. */
  metrics?: Metrics;
  /** Browser origins allowed to call (CORS); none by default. */
  corsOrigins?: readonly string[];
  /** Whose X-Forwarded-For names the caller (TRUST_PROXY); default: nobody's. */
  trustProxy?: TrustProxy;
  /** REQUEST_TIMEOUT_MS: longest a unary call or REST request may take, then `deadline_exceeded`. */
  requestTimeoutMs: number;
  /** Admission control of the API's calls (REST and RPC), from config.ts's settings. */
  admission: Admission;
  /** Caps on health Watch and reflection streams. Default: STREAM_LIMITS. */
  streamLimits?: StreamLimits;
  /** Where ListSessions and GetSession read: a read replica (DATABASE_READ_URL); default `db`. */
  reads?: ReadRouting;
  /** The built practice page, served at `/practice/`; none: not served. */
  practicePage?: PracticePageFiles;
  /** RPC_SHORT_PATH: unary gRPC and Connect calls on the short path (rpc/unary-short-path.ts). */
  rpcShortPath: boolean;
  /** Told which handler answered each call on a short-path route (tests). */
  onShortPathServed?: (by: ServedBy) => void;
  /** A SERVER span per request (ops/trace-requests.ts): on when OpenTelemetry is; default off. */
  tracing?: boolean;
}

/**
 * Builds the service's Fastify app: the Connect routes (gRPC, gRPC-Web,
 * Connect) and the REST gateway (at "/" and "/api"). It does not listen:
 * see one-port.ts, which serves it on one port.
 */
export async function buildApp(deps: AppDeps): Promise<App> {
  const app: App = fastify<AppServer, Http2ServerRequest, Http2ServerResponse, FastifyBaseLogger>({
    http2: true,
    // HTTP/2 on the connections the edge hands it (edge/one-port.ts: TLS, HTTP/1.1).
    serverFactory: (handler) => createHttp2Server(http2ServerOptions(), handler),
    // Fastify's lines about a second answer to a call the edge answered go at debug level:
    // set once on the app's logger, every request's child inherits them (pino's children are
    // its prototype's), instead of a wrapper per request.
    loggerInstance: quietSecondAnswers(deps.logger.child({})),
    // Our one line per request (ops/request-log.ts) replaces Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: MAX_BODY_BYTES,
    // Route schemas (rest/operations.ts) validate as they are written: a
    // number is not a string, whatever ajv could coerce it to.
    ajv: { customOptions: { coerceTypes: false } },
    // Responses are written from their schemas as rest/serializing.ts gives
    // them; a union left to choose by validation checks no format (the values are ours).
    schemaController: { compilersFactory: serializerCompilers },
    serializerOpts: { ajv: { validateFormats: false } },
    genReqId: requestId,
    // The caller's address (the admission key of a caller without a valid
    // token) from X-Forwarded-For only as far as trusted proxies wrote it.
    trustProxy: fastifyTrustProxy(deps.trustProxy ?? false),
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    return503OnClosing: true,
    // Otherwise Fastify answers a bad URL with its own JSON that echoes the path.
    frameworkErrors: (err, request, reply) => {
      if (err.code !== "FST_ERR_MAX_PARAM_LENGTH") {
        sendProblem(reply, errors.invalidArgument("the request URL is not valid"));
        return;
      }
      sendProblem(reply, pathParameterTooLong(request.url));
    },
  });

  // Before any route: a known path asked with another method is 405, not 404.
  const allowedMethods = routeMethods(app);
  const { requestTimeoutMs, admission } = deps;
  // A call's retries are bounded by what it has left (edge/call-limits.ts).
  const sessions = new PracticeSessions(deps.db, deps.clock, undefined, { reads: deps.reads });
  const quizzes = new Quizzes(deps.db, deps.reads, deps.clock);
  const health = deps.health ?? new HealthMonitor(deps.db);
  const metrics = deps.metrics ?? new Metrics(deps.pool);
  metrics.watchAdmission(admission);
  const logFailure = failureLog();
  const requestLog = new RequestLog(deps.logger, metrics);
  const services: DescService[] = [
    PracticeSessionService,
    QuizService,
    Health,
    ServerReflection,
    ServerReflectionV1alpha,
  ];
  const registry = reflectionRegistry(
    file_practice_v1_practice_session_service,
    file_practice_v1_quiz_service,
    file_grpc_health_v1_health,
    file_grpc_reflection_v1_reflection,
    file_grpc_reflection_v1alpha_reflection,
  );

  // Picks rpc/unary-short-path.ts's routes for unary Connect calls.
  app.addConstraintStrategy(unaryShortPathConstraint);
  app.decorate("streamPath", null);
  // Hooks on the root, before any route, so that every scope gets them.
  observeRequests(app, requestLog, procedurePaths(services));
  decorateCalls(app, { requestTimeoutMs });
  if (deps.tracing) traceRequests(app);
  app.addHook("onRequest", refuseLargeHttp2Head);
  await registerCors(app, deps.corsOrigins ?? []);
  await openApiGenerator(app);

  // Errors Fastify raises outside the REST scope (an unsupported content type
  // on a Connect path, say) are problem+json too. Set before the scopes that inherit it.
  app.setErrorHandler((err, request, reply) => {
    const sent = sendProblem(reply, err);
    if (meaningOfAnswer(request.resultCode, reply.statusCode).serverFault)
      logFailure(request.log, err, reply.statusCode);
    return sent;
  });
  const rpcOptions = {
    // connect-fastify types requests as Fastify's default server's: FastifyRequest.
    contextValues: (req: FastifyRequest) =>
      createContextValues()
        .set(callOutcomeKey, {
          settle: (code, userId) => recordOutcome(req, { code, userId }),
        })
        .set(callKey, req.call ?? undefined)
        .set(userIdKey, req.userId)
        .set(connectionKey, connectionOf(req.raw)),
    readMaxBytes: MAX_BODY_BYTES,
    compressMinBytes: COMPRESS_MIN_BYTES,
    jsonOptions: STRICT_JSON_OPTIONS,
  };
  const onFailure = (err: unknown, status: number) => logFailure(deps.logger, err, status);
  // What our unary paths run Connect's pieces with: connect-fastify's defaults, as its route has them.
  const connectOptions = {
    acceptCompression: [compressionGzip, compressionBrotli],
    readMaxBytes: MAX_BODY_BYTES,
    compressMinBytes: COMPRESS_MIN_BYTES,
    jsonOptions: STRICT_JSON_OPTIONS,
  };
  // What every API call gets at the edge, REST and RPC alike (edge/api-calls.ts).
  const edge = {
    authenticator: deps.authenticator,
    admission,
    requestTimeoutMs,
    pace: new RefusalPace(),
    restAnswer: sendProblem,
  };
  const practice = practiceRpc({
    sessions,
    quizzes,
    authenticator: deps.authenticator,
    onFailure,
  });
  const rpcGroups: RpcRoutes[] = [
    practice,
    // Health and reflection: for probes and tools, which carry no token; and
    // no server deadline, since Watch and reflection streams last on purpose.
    {
      routes: (router) => {
        router.service(
          Health,
          healthService(health, [PracticeSessionService.typeName, QuizService.typeName]),
        );
        const reflection = reflectionServices(registry, services);
        router.service(ServerReflection, reflection.v1);
        router.service(ServerReflectionV1alpha, reflection.v1alpha);
      },
      interceptors: [
        outcomeInterceptor(onFailure),
        streamLimitsInterceptor(deps.streamLimits ?? STREAM_LIMITS, health.drainSignal),
      ],
    },
  ];
  for (const group of rpcGroups) {
    const { interceptors } = group;
    // The Connect plugin replaces every content-type parser of its scope:
    // each group in a scope of its own, never wrapped in fastify-plugin.
    await app.register(async (scope: App) => {
      if (group === practice) apiCalls(scope, edge);
      await scope.register(fastifyConnectPlugin, {
        ...rpcOptions,
        routes: group.routes,
        interceptors,
      });
    });
    if (group === practice && deps.rpcShortPath) {
      // A sibling scope: the short path reads and parses the message itself.
      await app.register(async (scope: App) => {
        apiCalls(scope, edge);
        await scope.register(unaryShortPathRoutes, {
          routes: group.routes,
          interceptors,
          contextValues: rpcOptions.contextValues,
          onServed: deps.onShortPathServed,
          connectOptions,
        });
      });
      // Unary gRPC over HTTP/2, taken by the edge before Fastify (rpc/grpc-streams.ts).
      app.streamPath = grpcStreams({
        routes: group.routes,
        interceptors,
        connectOptions,
        door: edge,
        requestLog,
        logger: deps.logger,
        tracing: deps.tracing === true,
        trustProxy: (deps.trustProxy ?? false) !== false,
        onServed: deps.onShortPathServed,
      });
    }
  }
  await app.register(opsRoutes, { health });
  for (const prefix of ["", "/api"]) {
    await app.register(restRoutes, {
      prefix,
      sessions,
      quizzes,
      edge,
      hidden: prefix !== "",
    });
  }
  await app.register(openApiRoute);
  await app.register(homePageRoutes, {
    practicePage: deps.practicePage !== undefined,
    version: SERVICE_VERSION,
  });
  if (deps.practicePage) {
    await app.register(practicePageRoutes, {
      files: deps.practicePage,
      notFound: (reply) => sendProblem(reply, errors.routeNotFound()),
    });
  }
  app.setNotFoundHandler((request, reply) => {
    const allow = allowedMethods(request.url);
    if (allow.length === 0) return sendProblem(reply, errors.routeNotFound());
    reply.header("allow", allow.join(", "));
    return sendProblem(reply, new MethodNotAllowed(request.method, allow));
  });
  await app.ready();
  return app;
}

/**
 * One HTTP/2 session, or one HTTP/1.1 socket, is one connection; HTTP/1.1
 * requests arrive as `IncomingMessage`s whatever `App` says.
 */
function connectionOf(raw: IncomingMessage | Http2ServerRequest): object {
  return "stream" in raw ? (raw.stream.session ?? raw.stream) : raw.socket;
}

/** The URL paths of the services' procedures ("/pkg.Service/Method"). */
function procedurePaths(services: DescService[]): Set<string> {
  return new Set(services.flatMap((s) => s.methods.map((m) => `/${s.typeName}/${m.name}`)));
}

/**
 * TRUST_PROXY as Fastify takes it. A count trusts that many hops whoever the
 * peer is (Fastify itself trusts nobody for a number): right only where every
 * connection comes through that many proxies.
 */
function fastifyTrustProxy(
  trust: TrustProxy,
): boolean | string[] | ((a: string, hop: number) => boolean) {
  return typeof trust === "number" ? (_address, hop) => hop < trust : trust;
}
