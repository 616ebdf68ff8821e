import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { Logger } from "pino";
import type { App, AppRequest } from "../app-server.js";
import type { Metrics, Transport } from "./metrics.js";
import { decorateOutcome, outcomeOf } from "./outcome.js";

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
  const given = req.headers["x-request-id"];
  return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Adds to the root app (before any route) what every request gets: its id
 * echoed in `x-request-id`, one JSON log line when it ends (id, user,
 * transport, procedure, code, status, duration; never headers or bodies, so
 * no token), and a metrics sample. `rpcPaths` are the Connect procedures'
 * paths, to tell them from REST routes.
 */
export function observeRequests(app: App, metrics: Metrics, rpcPaths: Set<string>) {
  decorateOutcome(app);
  // Label strings are made once per route, not once per request.
  app.addHook("onRoute", (route) => {
    const rpc = rpcPaths.has(route.url);
    const method = Array.isArray(route.method) ? route.method.join(",") : route.method;
    route.config = { ...route.config, rpc, procedure: rpc ? route.url : `${method} ${route.url}` };
  });
  app.addHook("onRequest", (request, reply, done) => {
    reply.header("x-request-id", request.id);
    done();
  });
  app.addHook("onResponse", (request, reply, done) => {
    const config = request.routeOptions.config;
    // @fastify/cors answers preflights on the route they ask about: keep them
    // apart, or they would count as calls of that procedure.
    const transport = isPreflight(request)
      ? "preflight"
      : config.rpc
        ? rpcTransport(request.headers["content-type"])
        : "rest";
    const procedure = config.procedure ?? "unmatched";
    const { code, user } = outcomeOf(request, reply, transport);
    const ms = reply.elapsedTime;
    metrics.observe(transport, procedure, code, ms / 1000);
    request.log[config.quiet ? "debug" : "info"](
      {
        user,
        transport,
        procedure,
        code,
        status: reply.statusCode,
        ms: Math.round(ms * 10) / 10,
      },
      "request",
    );
    done();
  });
}

function isPreflight(request: AppRequest): boolean {
  return (
    request.method === "OPTIONS" && request.headers["access-control-request-method"] !== undefined
  );
}

/** The transport of an RPC, from its request's content type. */
export function rpcTransport(contentType: string | undefined): Transport {
  const type = contentType ?? "";
  if (type.startsWith("application/grpc-web")) return "grpc-web";
  if (type.startsWith("application/grpc")) return "grpc";
  return "connect";
}
/** What the request log and metrics record of a call served outside Fastify. */
export interface CallRecord {
  reqId: string;
  user: string;
  transport: Transport;
  procedure: string;
  code: string;
  status: number;
  ms: number;
}

/**
 * The log line and metrics sample of a call the RPC adapters served without
 * Fastify (src/rpc/h2-stream-adapter.ts, http1-rpc-adapter.ts): the same
 * fields as the Fastify hooks' line, so logs and dashboards see one service.
 */
export function recordCall(logger: Logger, metrics: Metrics, call: CallRecord): void {
  metrics.observe(call.transport, call.procedure, call.code, call.ms / 1000);
  logger.info(
    {
      reqId: call.reqId,
      user: call.user || undefined,
      transport: call.transport,
      procedure: call.procedure,
      code: call.code,
      status: call.status,
      ms: Math.round(call.ms * 10) / 10,
    },
    "request",
  );
}
