import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";
import { meaningOfAnswer } from "../app/codes.js";
import { HEADER_REQUEST_ID } from "../app/headers.js";
import type { App, AppReply, AppRequest } from "../app-server.js";
import { LogBudget } from "./log-budget.js";
import { type Metrics, rpcTransport, type Transport } from "./metrics.js";
import { decorateOutcome, outcomeOf } from "./outcome.js";
import { endServerSpan } from "./trace-requests.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The `procedure` label and log field: RPC path, or "METHOD /route". */
    procedure?: string;
    /** Whether the route is a Connect/gRPC/gRPC-Web procedure. */
    rpc?: boolean;
    /** Log this route's requests at debug level (probes, scrapes). */
    quiet?: boolean;
  }
}

/** An incoming `x-request-id` is kept if it looks like an id, not free text. */
const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The request's id: the caller's `x-request-id` when sensible, else a new UUID. */
export function requestId(req: { headers: IncomingHttpHeaders }): string {
  const given = req.headers[HEADER_REQUEST_ID];
  return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Adds to the root app (before any route) what every request gets: its id
 * echoed in `x-request-id`, and its line and metrics sample in `requestLog`.
 * `rpcPaths` are the Connect procedures' paths, to tell them from REST routes.
 */
export function observeRequests(app: App, requestLog: RequestLog, rpcPaths: Set<string>) {
  decorateOutcome(app);
  // Label strings are made once per route, not once per request.
  app.addHook("onRoute", (route) => {
    const rpc = rpcPaths.has(route.url);
    const method = Array.isArray(route.method) ? route.method.join(",") : route.method;
    route.config = { ...route.config, rpc, procedure: rpc ? route.url : `${method} ${route.url}` };
  });
  app.addHook("onRequest", (request, reply, done) => {
    reply.header(HEADER_REQUEST_ID, request.id);
    // "close", not Fastify's onResponse ("finish"): a call whose client left
    // before its answer is counted too (over HTTP/1.1 it never finishes).
    reply.raw.once("close", () => ended(request, reply));
    done();
  });
  function ended(request: AppRequest, reply: AppReply) {
    const config = request.routeOptions.config;
    // @fastify/cors answers preflights on the route they ask about: keep them
    // apart, or they would count as calls of that procedure.
    const transport = isPreflight(request)
      ? "preflight"
      : config.rpc
        ? rpcTransport(request.headers["content-type"])
        : "rest";
    const { code, user } = outcomeOf(request, reply, transport);
    // Nothing sent to a caller who left: 499, as nginx logs it.
    const status = code === "canceled" && !reply.raw.headersSent ? 499 : reply.statusCode;
    // Set only when tracing is on (trace-requests.ts): logs and traces join on these ids.
    const span = request.traceSpan;
    const ids = span?.spanContext();
    // The request's logger carries its id.
    requestLog.record(
      {
        user,
        transport,
        procedure: config.procedure ?? "unmatched",
        code,
        status,
        ms: reply.elapsedTime,
        traceId: ids?.traceId,
        spanId: ids?.spanId,
      },
      request.log,
      config.quiet ? "debug" : "info",
    );
    if (span !== undefined) endServerSpan(span, { transport, code, status });
  }
}

function isPreflight(request: AppRequest): boolean {
  return (
    request.method === "OPTIONS" && request.headers["access-control-request-method"] !== undefined
  );
}

/** What the request log and metrics record of a call. */
export interface CallRecord {
  user: string | undefined;
  transport: Transport;
  procedure: string;
  code: string;
  status: number;
  ms: number;
  /** The W3C trace and span ids of the request's span, when tracing is on. */
  traceId?: string;
  spanId?: string;
}

/** What `RequestLog` needs of a logger: pino's, or a Fastify request's (a pino child, typed without `isLevelEnabled`). */
export interface LineLogger {
  info(fields: object, msg: string): void;
  debug(fields: object, msg: string): void;
  isLevelEnabled?(level: string): boolean;
}

/**
 * Lines a second, at most, of the other outcomes: calls refused or failed
 * for the caller's doing (a bad token or input, shed load, a reset). A
 * flood of them costs its sender next to nothing, and must not buy a log
 * line each; metrics still count every one.
 */
const REFUSED_LINES_PER_SECOND = 100;

/**
 * Lines a second, at most, of calls the client left (reset, closed, past
 * its own deadline): as cheap for a client to make as a refusal, and as
 * common as its users' cancellations; the warn budget operations.md
 * promises for them.
 */
const CANCELED_LINES_PER_SECOND = 5;

/**
 * One JSON line per request when it ends (id, user, transport, procedure,
 * code, status, duration; never headers or bodies, so no token) and its
 * metrics sample, written by the Fastify hooks (`observeRequests`) for every
 * request, REST and RPC alike, so logs and dashboards see one service. Lines
 * of refused calls are rate-limited (REFUSED_LINES_PER_SECOND); the next
 * one written says how many were left out (`suppressed`).
 */
export class RequestLog {
  readonly #refused = new LogBudget(REFUSED_LINES_PER_SECOND);
  readonly #canceled = new LogBudget(CANCELED_LINES_PER_SECOND);

  constructor(
    /** Where lines go when no logger is given (a Fastify request brings its own, with its id). */
    readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {}

  /** Records one call: its metrics sample, and its line in `log` at `level`. */
  record(call: CallRecord, log: LineLogger = this.logger, level: "info" | "debug" = "info"): void {
    this.metrics.observe(call.transport, call.procedure, call.code, call.ms / 1000);
    // A line that would not be written takes nothing from the budget.
    if (log.isLevelEnabled?.(level) === false) return;
    let suppressed: number | undefined;
    // Every line of a served call and of a fault of ours is written.
    const fault = meaningOfAnswer(call.code, call.status).fault;
    if (fault !== "none" && fault !== "ours") {
      suppressed = (call.code === "canceled" ? this.#canceled : this.#refused).take();
      if (suppressed === undefined) return;
    }
    log[level](
      {
        user: call.user || undefined,
        transport: call.transport,
        procedure: call.procedure,
        code: call.code,
        status: call.status,
        ms: Math.round(call.ms * 10) / 10,
        suppressed: suppressed || undefined,
        trace_id: call.traceId,
        span_id: call.spanId,
      },
      "request",
    );
  }
}
