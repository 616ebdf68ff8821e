import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { DescService } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createConnectRouter,
  createServiceImplSpec,
  type Interceptor,
} from "@connectrpc/connect";
import {
  createMethodSerializationLookup,
  type UniversalHandler,
  validateUniversalHandlerOptions,
} from "@connectrpc/connect/protocol";
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
import { compileBinaryWriter } from "./proto-binary.js";
import { compileJsonWriter } from "./proto-json.js";
import { readUpTo } from "./read-body.js";
import type { Answer, Options, UnarySpec } from "./short-path-call.js";
import { connectAnswer } from "./short-path-connect.js";
import { grpcAnswer } from "./short-path-grpc.js";

type ConstraintStrategy = Parameters<App["addConstraintStrategy"]>[0];
type Stored = NonNullable<ReturnType<ReturnType<ConstraintStrategy["storage"]>["get"]>>;
type RawRequest = IncomingMessage | Http2ServerRequest;
/** The route constraint that picks the short path: a unary gRPC or Connect POST. */
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
    if (typeof type !== "string") return undefined;
    const lower = type.toLowerCase();
    // gRPC over HTTP/1.1 (no trailers) is left to Connect.
    if (lower === "application/grpc" || lower === "application/grpc+proto")
      return req.httpVersionMajor === 2 ? "grpc" : undefined;
    return contentTypeUnaryRegExp.test(type) ? "connect" : undefined;
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
  onServed?: (by: "short path" | "connect") => void;
}

/**
 * Unary gRPC (binary, HTTP/2) and Connect (POST) calls as Fastify routes of
 * their own, beside connect-fastify's: a route constraint on the content type
 * sends them here, every other call stays on connect-fastify's route. Connect
 * runs a unary call through a chain of async generators and three
 * AbortControllers aborted with a DOMException each; here the request is one
 * buffer and each step a plain call, with Connect's own pieces (timeout
 * parsing, compression negotiation, serialization, interceptors and
 * invocation, error and trailer encoding) in Connect's order.
 *
 * What this cannot answer exactly as Connect would (a body over the limit or
 * not as its length says, an unknown encoding, a bad timeout) goes to
 * Connect's own handler.
 */
export async function unaryShortPathRoutes(
  scope: FastifyInstance,
  options: UnaryShortPathOptions,
): Promise<void> {
  const opt = validateUniversalHandlerOptions({
    ...options.connectOptions,
    interceptors: options.interceptors,
  });
  // Connect's per-call gate and its shutdown signal have no place here: the
  // edge owns both (edge/api-calls.ts, edge/one-port.ts).
  if (opt.requestGate !== undefined || opt.shutdownSignal !== undefined) {
    throw new Error("the unary short path does not honour requestGate or shutdownSignal");
  }
  const specs = new Map<string, UnarySpec>();
  const router = createConnectRouter({ ...options.connectOptions, interceptors: opt.interceptors });
  // Records each service's methods as it registers them on the fallback router.
  const recorder: ConnectRouter = {
    handlers: router.handlers,
    service(service: DescService, impl: never, o?: never) {
      const spec = createServiceImplSpec(service, impl);
      for (const method of Object.values(spec.methods)) {
        if (method.kind === "unary")
          specs.set(`/${service.typeName}/${method.method.name}`, method);
      }
      router.service(service, impl, o);
      return recorder;
    },
    rpc: (...args: never[]) => {
      (router.rpc as (...a: never[]) => ConnectRouter)(...args);
      return recorder;
    },
  } as ConnectRouter;
  options.routes(recorder);
  const fallbacks = new Map(router.handlers.map((h) => [h.requestPath, h]));

  // As connect-fastify: the body is read by the handler, not by Fastify.
  scope.addContentTypeParser(
    ["application/grpc", "application/grpc+proto", contentTypeUnaryJson, contentTypeUnaryProto],
    (_req, _payload, done) => done(null, undefined),
  );
  for (const [path, spec] of specs) {
    const fallback = fallbacks.get(path) as UniversalHandler;
    const serialization = createMethodSerializationLookup(
      spec.method,
      opt.binaryOptions,
      opt.jsonOptions,
      opt,
    );
    const json = compileJsonWriter(spec.method.output, opt.jsonOptions);
    const binary = compileBinaryWriter(spec.method.output);
    const route = (protocol: string, answer: Answer) => {
      const served: Route = {
        spec,
        fallback,
        answer,
        contextValues: options.contextValues,
        opt,
        onServed: options.onServed,
      };
      scope.post(path, { constraints: { unaryShortPath: protocol } }, (req, reply) =>
        serve(req, reply, served),
      );
    };
    route("grpc", grpcAnswer(opt, binary));
    route("connect", connectAnswer(opt, serialization, json));
  }
}

/** One method's route on one protocol. */
interface Route {
  spec: UnarySpec;
  /** Connect's own handler, for what the short path leaves to it. */
  fallback: UniversalHandler;
  answer: Answer;
  contextValues: (req: FastifyRequest) => ContextValues;
  opt: Options;
  onServed: UnaryShortPathOptions["onServed"];
}

async function serve(req: FastifyRequest, reply: FastifyReply, route: Route): Promise<void> {
  const { spec, fallback, answer } = route;
  const raw = req.raw as RawRequest;
  const values = route.contextValues(req);
  // Room for a gRPC envelope's 5-byte header over the message limit.
  const read = await readUpTo(raw, route.opt.readMaxBytes + 5);
  const res = reply.raw as unknown as Http2ServerResponse;
  // The client left before its body came (a closed HTTP/2 stream ends its
  // body as if whole), or the edge answered at the deadline: no one to
  // answer, and Connect's handler would build a whole call to find that out.
  if (read === undefined || answeredOrGone(res)) return;
  const out = read.whole
    ? await answer({ req, raw, res: reply.raw, body: read.bytes, spec, values })
    : undefined;
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

/** Headers as connect-node hands them to Node: repeated names (set-cookie) as arrays. */
function nodeHeaders(headers: Headers): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  headers.forEach((value, key) => {
    const existing = out[key];
    if (existing === undefined) out[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else out[key] = [existing, value];
  });
  return out;
}
