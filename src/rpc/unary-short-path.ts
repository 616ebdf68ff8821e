import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { type DescService, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ContextValues,
  createConnectRouter,
  createServiceImplSpec,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
} from "@connectrpc/connect";
import {
  type Compression,
  compressionNegotiate,
  createMethodSerializationLookup,
  invokeUnaryImplementation,
  mergeNonProtocolHeaders,
  type UniversalHandler,
  validateUniversalHandlerOptions,
} from "@connectrpc/connect/protocol";
import {
  contentTypeUnaryJson,
  contentTypeUnaryProto,
  contentTypeUnaryRegExp,
  errorToJsonBytes,
  parseTimeout as parseConnectTimeout,
  trailerMux,
} from "@connectrpc/connect/protocol-connect";
import {
  parseTimeout as parseGrpcTimeout,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import {
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { codeHttpStatus } from "../app/codes.js";
import type { App } from "../app-server.js";
import { recordOutcome } from "../ops/outcome.js";
import { compileBinaryWriter } from "./proto-binary.js";
import { compileJsonWriter } from "./proto-json.js";
import { readUpTo } from "./read-body.js";

type ConstraintStrategy = Parameters<App["addConstraintStrategy"]>[0];
type Stored = NonNullable<ReturnType<ReturnType<ConstraintStrategy["storage"]>["get"]>>;
type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;
type Options = ReturnType<typeof validateUniversalHandlerOptions>;
type Serialization = ReturnType<typeof createMethodSerializationLookup>;
type RawRequest = IncomingMessage | Http2ServerRequest;
type JsonWriter = ReturnType<typeof compileJsonWriter>;
type BinaryWriter = NonNullable<ReturnType<typeof compileBinaryWriter>>;

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

/** What a protocol answers a call, or undefined to leave the call to Connect's handler. */
type Answer = (call: Call) => Promise<Reply | undefined>;

interface Call {
  req: FastifyRequest;
  raw: RawRequest;
  res: FastifyReply["raw"];
  body: Uint8Array;
  spec: UnarySpec;
  values: ContextValues;
}

interface Reply {
  status: number;
  header: Headers;
  body: Uint8Array | undefined;
  trailer?: Headers;
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
    route("grpc", (call) => grpcAnswer(call, opt, binary));
    route("connect", (call) => connectAnswer(call, opt, serialization, json));
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
  const out = read?.whole
    ? await answer({ req, raw, res: reply.raw, body: read.bytes, spec, values })
    : undefined;
  route.onServed?.(out === undefined ? "connect" : "short path");
  const res = reply.raw as unknown as Http2ServerResponse;
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
    const body = read ? read.replay() : raw;
    const request = universalRequestFromNodeRequest(raw, reply.raw as never, body as never, values);
    await universalResponseToNodeResponse(await fallback(request), reply.raw);
  } catch (e) {
    if (ConnectError.from(e).code === Code.Aborted) return;
    req.log.error({ err: e }, `handler for rpc ${spec.method.name} failed`);
  }
}

/** The answer Connect's gRPC handler gives. */
async function grpcAnswer(
  call: Call,
  opt: Options,
  binary: BinaryWriter | undefined,
): Promise<Reply | undefined> {
  const { req, body, spec } = call;
  const timeout = parseGrpcTimeout(header(req, "grpc-timeout"), opt.maxTimeoutMs);
  const compression = compressionNegotiate(
    opt.acceptCompression,
    header(req, "grpc-encoding"),
    header(req, "grpc-accept-encoding"),
    "grpc-accept-encoding",
  );
  if (timeout.error || compression.error || body.length < 5) return undefined;
  const flags = body[0] as number;
  const length = new DataView(body.buffer, body.byteOffset, 5).getUint32(1);
  if (length !== body.length - 5 || length > opt.readMaxBytes || flags > 1) return undefined;
  if (flags === 1 && compression.request === null) return undefined;
  const bytes = await decompress(flags === 1 ? compression.request : null, body.subarray(5), opt);
  if (bytes === undefined) return undefined;
  const context = handlerContext(call, "grpc", {
    "content-type": "application/grpc+proto",
  });
  context.responseTrailer.set("grpc-status", "0");
  if (compression.response) context.responseHeader.set("grpc-encoding", compression.response.name);
  let out: Uint8Array | undefined;
  try {
    const input = parseBinary(call, bytes);
    const output = await invokeUnaryImplementation(spec, context, input, opt.interceptors);
    const encoded = binary?.(output) ?? toBinary(spec.method.output, output);
    // Connect's serialization checks the message before its envelope.
    if (encoded.byteLength > opt.writeMaxBytes) throw writeTooLarge(encoded, opt);
    out = await envelope(encoded, compression.response, opt);
  } catch (e) {
    setTrailerStatus(context.responseTrailer, asConnectError(e));
  }
  return {
    status: 200,
    header: context.responseHeader,
    body: out,
    trailer: context.responseTrailer,
  };
}

/** The answer Connect's handler gives a unary Connect POST. */
async function connectAnswer(
  call: Call,
  opt: Options,
  serialization: Serialization,
  json: JsonWriter | undefined,
): Promise<Reply | undefined> {
  const { req, body, spec } = call;
  const binary = header(req, "content-type")?.toLowerCase() === contentTypeUnaryProto;
  const timeout = parseConnectTimeout(header(req, "connect-timeout-ms"), opt.maxTimeoutMs);
  const compression = compressionNegotiate(
    opt.acceptCompression,
    header(req, "content-encoding"),
    header(req, "accept-encoding"),
    "accept-encoding",
  );
  const length = header(req, "content-length");
  if (
    timeout.error ||
    compression.error ||
    opt.requireConnectProtocolHeader ||
    body.length > opt.readMaxBytes ||
    (length !== null && Number(length) !== body.length)
  ) {
    return undefined;
  }
  const bytes = await decompress(compression.request, body, opt);
  if (bytes === undefined) return undefined;
  const context = handlerContext(call, "connect", {
    "content-type": binary ? contentTypeUnaryProto : contentTypeUnaryJson,
  });
  let status = 200;
  let out: Uint8Array;
  try {
    const input = binary ? parseBinary(call, bytes) : serialization.getI(false).parse(bytes);
    const output = await invokeUnaryImplementation(spec, context, input, opt.interceptors);
    const text = binary ? undefined : json?.(output);
    const encoded = text === undefined ? undefined : Buffer.from(text);
    out =
      encoded !== undefined && encoded.byteLength <= opt.writeMaxBytes
        ? encoded
        : serialization.getO(binary).serialize(output);
  } catch (e) {
    const error = asConnectError(e);
    status = codeHttpStatus(error.code);
    context.responseHeader.set("content-type", contentTypeUnaryJson);
    if (!error.isWireError) mergeNonProtocolHeaders(context.responseHeader, error.metadata);
    out = errorToJsonBytes(error, opt.jsonOptions);
  }
  if (compression.response && out.byteLength >= opt.compressMinBytes) {
    out = await compression.response.compress(out);
    context.responseHeader.set("content-encoding", compression.response.name);
  }
  // trailerMux copies the headers to add "trailer-" ones: most calls have none.
  const trailers = !context.responseTrailer.keys().next().done;
  const muxed = trailers
    ? trailerMux(context.responseHeader, context.responseTrailer)
    : context.responseHeader;
  muxed.set("content-length", String(out.byteLength));
  return { status, header: muxed, body: out };
}

/** `bytes` decompressed (as they are, with no compression); undefined if they do not decompress. */
async function decompress(
  compression: Compression | null,
  bytes: Uint8Array,
  opt: { readMaxBytes: number },
): Promise<Uint8Array | undefined> {
  if (compression === null) return bytes;
  try {
    return await compression.decompress(bytes, opt.readMaxBytes);
  } catch {
    return undefined;
  }
}

/**
 * A binary request message. One that does not parse is the caller's fault
 * (`invalid_argument`), as on Connect's route (patches/@connectrpc+connect+*.patch).
 */
function parseBinary(call: Call, bytes: Uint8Array) {
  try {
    return fromBinary(call.spec.method.input, bytes);
  } catch (e) {
    recordOutcome(call.req, { code: "invalid_argument" });
    const reason = e instanceof Error ? e.message : String(e);
    throw new ConnectError(`parse binary: ${reason}`, Code.InvalidArgument);
  }
}

function asConnectError(e: unknown): ConnectError {
  return e instanceof ConnectError
    ? e
    : new ConnectError("internal error", Code.Internal, undefined, undefined, e);
}

/**
 * The handler's context, as Connect's has it, but for its signal: the edge's
 * call (edge/call.ts), aborted at the call's one deadline, when its client
 * leaves, and once it has been answered.
 */
function handlerContext(
  call: Call,
  protocolName: string,
  responseHeader: Record<string, string>,
): HandlerContext {
  const { raw, spec } = call;
  const edge = call.req.call;
  if (edge === null) throw new Error("the short path runs in a scope with edge/api-calls.ts");
  return {
    service: spec.method.parent,
    method: spec.method,
    requestMethod: "POST",
    protocolName,
    url: callUrl(raw),
    signal: edge.signal,
    timeoutMs: edge.remainingMs,
    requestHeader: requestHeaders(call.req),
    responseHeader: new Headers(responseHeader),
    responseTrailer: new Headers(),
    values: call.values,
  };
}

/** The call's URL as connect-node builds it. */
function callUrl(raw: RawRequest): string {
  const encrypted = "encrypted" in raw.socket && raw.socket.encrypted;
  const authority = "authority" in raw ? raw.authority : raw.headers.host;
  const base = `${encrypted ? "https" : "http"}://${authority}`;
  // A method's path from one host is the same text call after call: parsed once.
  const key = `${base} ${raw.url}`;
  let url = urls.get(key);
  if (url === undefined) {
    url = new URL(raw.url ?? "", base).toString();
    if (urls.size >= URLS_KEPT) urls.clear();
    urls.set(key, url);
  }
  return url;
}

const urls = new Map<string, string>();
const URLS_KEPT = 1000;

/** The error Connect's serialization raises for a message over `writeMaxBytes`. */
function writeTooLarge(message: Uint8Array, opt: { writeMaxBytes: number }): ConnectError {
  return new ConnectError(
    `message size ${message.byteLength} is larger than configured writeMaxBytes ${opt.writeMaxBytes}`,
    Code.ResourceExhausted,
  );
}

/** One envelope, compressed as Connect compresses it (at least `compressMinBytes`). */
async function envelope(
  message: Uint8Array,
  compression: Compression | null,
  opt: { compressMinBytes: number },
): Promise<Uint8Array> {
  let payload = message;
  let flags = 0;
  if (compression && message.length >= opt.compressMinBytes) {
    payload = await compression.compress(message);
    flags = 1;
  }
  const out = Buffer.allocUnsafe(payload.length + 5);
  out[0] = flags;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

function header(req: FastifyRequest, name: string): string | null {
  const value = req.headers[name];
  return typeof value === "string" ? value : null;
}

function requestHeaders(req: FastifyRequest): Headers {
  const out = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (k.startsWith(":") || v === undefined) continue;
    if (Array.isArray(v)) for (const e of v) out.append(k, e);
    else out.append(k, String(v));
  }
  return out;
}

/** Headers set on the reply by root hooks (CORS, request id), as connect-fastify copies them. */
function answeredOrGone(res: Http2ServerResponse): boolean {
  return res.headersSent || res.writableEnded || res.destroyed || res.stream?.destroyed === true;
}

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
