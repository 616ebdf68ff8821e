import { type Context, context, type Span, SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { meaningOfAnswer } from "../app/codes.js";
import type { App } from "../app-server.js";
import { startSpanFrom } from "../tracer.js";
import { rpcTransport, type Transport } from "./metrics.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route's span name and RPC attributes, made once per route (trace-requests.ts). */
    trace?: RouteTrace;
  }
  interface FastifyRequest {
    /** The request's SERVER span, when tracing is on (trace-requests.ts). */
    traceSpan: Span | undefined;
    /** The context with that span active. */
    traceContext: Context | undefined;
  }
}

/** What a route's spans are named and say of it, whatever the request. */
export interface RouteTrace {
  name: string;
  /** RPC routes: `rpc.service` and `rpc.method`. */
  rpc?: { service: string; method: string };
  /** REST routes: `http.route`. */
  route?: string;
}

/**
 * One SERVER span per request, REST and RPC alike (the short path too: it is
 * a Fastify route), its parent the caller's `traceparent` when there is a
 * valid one (a malformed one is ignored: a new trace, never a failed call).
 * Named and described by OpenTelemetry's semantic conventions: for RPC
 * `practice.v1.PracticeSessionService/StartSession` with `rpc.*`, for REST
 * `GET /quizzes/:quiz_id/sessions` with `http.route`. No header values, no
 * query string, no bodies: never a token or an answer.
 *
 * Registered on the root only when tracing is on (after `observeRequests`,
 * whose route labels it reads). The span's context is made active for the
 * hooks and the handler, so the use case and its SQL statements nest under it.
 */
export function traceRequests(app: App): void {
  app.decorateRequest("traceSpan", undefined);
  app.decorateRequest("traceContext", undefined);
  // After observeRequests' onRoute, which labels the procedure.
  app.addHook("onRoute", (route) => {
    route.config = { ...route.config, trace: routeTrace(route.config ?? {}, route.url) };
    // Past a body's read (stream events carry no request's context), the span
    // is made active again for the remaining hooks and the handler; a route
    // without a body keeps the context onRequest set.
    const methods = [route.method].flat();
    if (methods.some((m) => m !== "GET" && m !== "HEAD")) {
      route.preHandler = [[route.preHandler ?? []].flat(), reenterTraceContext].flat();
    }
  });
  app.addHook("onRequest", (request, _reply, done) => {
    const config = request.routeOptions.config;
    // Probes (quiet routes: /healthz, /readyz) every few seconds would bury the calls.
    if (config.quiet) return done();
    const { span, context: traceContext } = startServerSpan({
      headers: request.headers,
      method: request.method,
      httpVersion: request.raw.httpVersion,
      path: request.url.split("?", 1)[0] ?? "/",
      scheme: request.protocol,
      trace: config.trace,
    });
    request.traceSpan = span;
    request.traceContext = traceContext;
    context.with(traceContext, done);
  });
}

/**
 * A request's SERVER span, its parent the caller's `traceparent` when there
 * is a valid one, and the context with it active. Attributes only once
 * sampled: a call that is not costs no attribute work.
 */
export function startServerSpan(request: {
  headers: Record<string, string | string[] | undefined>;
  method: string;
  httpVersion: string;
  path: string;
  scheme: string;
  /** The route's names (`routeTrace`). */
  trace: RouteTrace | undefined;
}): { span: Span; context: Context } {
  const names = request.trace;
  const started = startSpanFrom(request.headers, names?.name ?? request.method, {
    kind: SpanKind.SERVER,
  });
  const span = started.span;
  if (span.isRecording()) {
    span.setAttribute("http.request.method", request.method);
    const protocol = request.httpVersion === "2.0" ? "2" : request.httpVersion;
    span.setAttribute("network.protocol.version", protocol);
    span.setAttribute("url.path", request.path);
    span.setAttribute("url.scheme", request.scheme);
    if (names?.rpc) {
      const transport = rpcTransport(firstValue(request.headers["content-type"]));
      span.setAttribute("rpc.system", transport === "connect" ? "connect_rpc" : "grpc");
      span.setAttribute("rpc.service", names.rpc.service);
      span.setAttribute("rpc.method", names.rpc.method);
    } else if (names?.route !== undefined) {
      span.setAttribute("http.route", names.route);
    }
  }
  return started;
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Ends a request's SERVER span with how its call ended: the HTTP status,
 * the gRPC status of an RPC, the code of a failure, and an error status
 * only for a fault of the server's own.
 */
export function endServerSpan(
  span: Span,
  end: { transport: Transport; code: string; status: number },
): void {
  if (!span.isRecording()) {
    span.end();
    return;
  }
  const { transport, code, status } = end;
  const meaning = meaningOfAnswer(code, status);
  span.setAttribute("http.response.status_code", status);
  if (transport === "grpc" || transport === "grpc-web") {
    span.setAttribute("rpc.grpc.status_code", meaning.grpcStatus);
  }
  if (code !== "ok") {
    span.setAttribute("error.type", code);
    if (transport === "connect") span.setAttribute("rpc.connect_rpc.error_code", code);
  }
  // The code, never the error's message: a database's may quote a value.
  if (meaning.serverFault) span.setStatus({ code: SpanStatusCode.ERROR, message: code });
  span.end();
}

function reenterTraceContext(
  request: { traceContext: Context | undefined },
  _reply: unknown,
  done: () => void,
): void {
  if (request.traceContext === undefined) done();
  else context.with(request.traceContext, done);
}

/**
 * `practice.v1.PracticeSessionService/StartSession` (rpc.service/rpc.method)
 * for RPC, "METHOD /route" for REST: the labels observeRequests gave the route.
 */
export function routeTrace(config: { rpc?: boolean; procedure?: string }, url: string): RouteTrace {
  const procedure = config.procedure ?? url;
  if (config.rpc) {
    const [service = "", method = ""] = procedure.slice(1).split("/");
    return { name: procedure.slice(1), rpc: { service, method } };
  }
  return { name: procedure, route: url };
}
