import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  type createConnectRouter,
  type Interceptor,
} from "@connectrpc/connect";
import {
  contentTypeUnaryJson,
  contentTypeUnaryProto,
  contentTypeUnaryRegExp,
} from "@connectrpc/connect/protocol-connect";
import {
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { App } from "../app-server.js";
import type { Call as EdgeCall } from "../edge/call.js";
import { recordOutcome } from "../ops/outcome.js";
import { nodeHeaders } from "./lazy-headers.js";
import { readUpTo } from "./read-body.js";
import { type Call, callUrl, type Options, type ServedBy } from "./short-path-call.js";
import { type UnaryMethod, unaryMethods } from "./unary-methods.js";

type ConstraintStrategy = Parameters<App["addConstraintStrategy"]>[0];
type Stored = NonNullable<ReturnType<ReturnType<ConstraintStrategy["storage"]>["get"]>>;
type RawRequest = IncomingMessage | Http2ServerRequest;
/** The route constraint that picks the short path: a unary Connect POST. */
export const unaryShortPathConstraint: ConstraintStrategy = {
  name: "unaryShortPath",
  storage() {
    const handlers = new Map<unknown, Stored>();
    return {
      get: (value) => handlers.get(value) ?? null,
      set: (value, store) => {
        handlers.set(value, store);
      },
    };
  },
  deriveConstraint(req) {
    const type = req.headers["content-type"];
    return typeof type === "string" && contentTypeUnaryRegExp.test(type) ? "connect" : undefined;
  },
  mustMatchWhenDerived: false,
};

export interface UnaryShortPathOptions {
  /** The services' routes, as given to connect-fastify. */
  routes: (router: ConnectRouter) => void;
  /** The interceptors connect-fastify runs them under, in the same order. */
  interceptors: Interceptor[];
  contextValues: (req: FastifyRequest) => ContextValues;
  /** The options connect-fastify's router is built with (limits, compression, JSON). */
  connectOptions: Parameters<typeof createConnectRouter>[0];
  /** Told which handler answered each call that took a short-path route (the differential test). */
  onServed?: (by: ServedBy) => void;
}

/**
 * Unary Connect calls (POST) as Fastify routes of their own, beside
 * connect-fastify's: a route constraint on the content type sends them here,
 * every other call stays on connect-fastify's route (unary gRPC over HTTP/2
 * is taken before Fastify, rpc/grpc-streams.ts). Connect runs a unary call
 * through a chain of async generators and three AbortControllers aborted
 * with a DOMException each; here the request is one buffer and each step a
 * plain call, with Connect's own pieces (timeout parsing, compression
 * negotiation, serialization, interceptors and invocation, error encoding)
 * in Connect's order.
 *
 * What this cannot answer exactly as Connect would (a body over the limit or
 * not as its length says, an unknown encoding, a bad timeout) goes to
 * Connect's own handler.
 */
export async function unaryShortPathRoutes(
  scope: FastifyInstance,
  options: UnaryShortPathOptions,
): Promise<void> {
  const { opt, methods } = unaryMethods(
    options.routes,
    options.connectOptions,
    options.interceptors,
  );
  // As connect-fastify: the body is read by the handler, not by Fastify.
  scope.addContentTypeParser(
    [contentTypeUnaryJson, contentTypeUnaryProto],
    (_req, _payload, done) => done(null, undefined),
  );
  for (const [path, method] of methods) {
    const served: Route = {
      method,
      contextValues: options.contextValues,
      opt,
      onServed: options.onServed,
    };
    scope.post(path, { constraints: { unaryShortPath: "connect" } }, (req, reply) =>
      serve(req, reply, served),
    );
  }
}

/** One method's route. */
interface Route {
  method: UnaryMethod;
  contextValues: (req: FastifyRequest) => ContextValues;
  opt: Options;
  onServed: UnaryShortPathOptions["onServed"];
}

async function serve(req: FastifyRequest, reply: FastifyReply, route: Route): Promise<void> {
  const { spec, fallback, connect: answer } = route.method;
  const raw = req.raw as RawRequest;
  const values = route.contextValues(req);
  // Room for a gRPC envelope's 5-byte header over the message limit.
  const read = await readUpTo(raw, route.opt.readMaxBytes + 5);
  const res = reply.raw as unknown as Http2ServerResponse;
  // The client left before its body came (a closed HTTP/2 stream ends its
  // body as if whole), or the edge answered at the deadline: no one to
  // answer, and Connect's handler would build a whole call to find that out.
  if (read === undefined || answeredOrGone(res)) return;
  const call: Call = {
    headers: req.headers,
    url: () => {
      const encrypted = "encrypted" in raw.socket && raw.socket.encrypted === true;
      return callUrl(
        encrypted,
        "authority" in raw ? raw.authority : raw.headers.host,
        raw.url ?? "",
      );
    },
    // The short path's scope has the edge's calls (edge/api-calls.ts).
    edge: req.call as EdgeCall,
    body: read.bytes,
    spec,
    values,
    settle: (code) => recordOutcome(req, { code }),
  };
  const out = read.whole ? await answer(call) : undefined;
  route.onServed?.(out === undefined ? "connect" : "short path");
  // As universalResponseToNodeResponse: nothing over an answer already sent
  // (the edge's, at the deadline) or on a stream already gone.
  if (out !== undefined && answeredOrGone(res)) return;
  copyReplyHeaders(reply);
  try {
    if (out !== undefined) {
      // What universalResponseToNodeResponse writes for one chunk, without its awaits.
      res.writeHead(out.status, nodeHeaders(out.header));
      if (out.trailer) res.addTrailers(nodeHeaders(out.trailer));
      if (out.body === undefined) res.end();
      else res.end(out.body);
      return;
    }
    // Connect's own handler, as connect-fastify calls it.
    const request = universalRequestFromNodeRequest(
      raw,
      reply.raw as never,
      read.replay() as never,
      values,
    );
    await universalResponseToNodeResponse(await fallback(request), reply.raw);
  } catch (e) {
    if (ConnectError.from(e).code === Code.Aborted) return;
    req.log.error({ err: e }, `handler for rpc ${spec.method.name} failed`);
  }
}

/** Whether an answer was sent already (the edge's, at the deadline) or the stream is gone. */
function answeredOrGone(res: Http2ServerResponse): boolean {
  return res.headersSent || res.writableEnded || res.destroyed || res.stream?.destroyed === true;
}

/** Headers set on the reply by root hooks (CORS, request id), as connect-fastify copies them. */
function copyReplyHeaders(reply: FastifyReply): void {
  for (const [key, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) reply.raw.setHeader(key, value);
  }
}
