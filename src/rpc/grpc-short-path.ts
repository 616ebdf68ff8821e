import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { constants as h2 } from "node:http2";
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
  invokeUnaryImplementation,
  type UniversalHandler,
} from "@connectrpc/connect/protocol";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import {
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from "fastify";
import type { App } from "../app-server.js";
import { recordOutcome } from "../ops/outcome.js";
import { readUpTo } from "./read-body.js";

type ConstraintStrategy = Parameters<App["addConstraintStrategy"]>[0];
type Stored = NonNullable<ReturnType<ReturnType<ConstraintStrategy["storage"]>["get"]>>;
type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;

/** The route constraint that picks the short path: a binary gRPC call. */
export const grpcUnaryConstraint: ConstraintStrategy = {
  name: "grpcBinary",
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
    // gRPC over HTTP/1.1 (no trailers) is left to Connect.
    if (req.httpVersionMajor !== 2) return undefined;
    const type = req.headers["content-type"];
    if (typeof type !== "string") return undefined;
    const lower = type.toLowerCase();
    return lower === "application/grpc" || lower === "application/grpc+proto"
      ? "binary"
      : undefined;
  },
  mustMatchWhenDerived: false,
};

export interface GrpcShortPathOptions {
  /** The services' routes, as given to connect-fastify. */
  routes: (router: ConnectRouter) => void;
  /** The interceptors connect-fastify runs them under, in the same order. */
  interceptors: Interceptor[];
  contextValues: (req: FastifyRequest) => ContextValues;
  readMaxBytes: number;
  compressMinBytes: number;
  acceptCompression: Compression[];
  /** Connect options the fallback handler is built with (as connect-fastify's). */
  connectOptions: Parameters<typeof createConnectRouter>[0];
}

/**
 * Unary gRPC calls (binary) as Fastify routes of their own, beside
 * connect-fastify's: a route constraint on the content type sends them here,
 * every other call stays on connect-fastify's route. Connect runs a unary call
 * through a chain of async generators and three AbortControllers aborted with
 * a DOMException each; here the request is one buffer and each step a plain
 * call, with Connect's own pieces (timeout parsing, compression negotiation,
 * interceptors and invocation, trailer status) in Connect's order.
 *
 * What this cannot answer exactly as Connect would (not one well-formed
 * envelope within `readMaxBytes`, an unknown encoding, a bad `grpc-timeout`)
 * goes to Connect's own handler.
 */
export async function grpcShortPathRoutes(
  scope: FastifyInstance,
  options: GrpcShortPathOptions,
): Promise<void> {
  const specs = new Map<string, UnarySpec>();
  const router = createConnectRouter({
    ...options.connectOptions,
    acceptCompression: options.acceptCompression,
    interceptors: options.interceptors,
  });
  // Records each service's methods as it registers them on the fallback router.
  const recorder: ConnectRouter = {
    handlers: router.handlers,
    service(service: DescService, impl: never, opts?: never) {
      const spec = createServiceImplSpec(service, impl);
      for (const method of Object.values(spec.methods)) {
        if (method.kind === "unary")
          specs.set(`/${service.typeName}/${method.method.name}`, method);
      }
      router.service(service, impl, opts);
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
    ["application/grpc", "application/grpc+proto"],
    (_req, _payload, done) => done(null, undefined),
  );
  const routeOptions: RouteShorthandOptions = { constraints: { grpcBinary: "binary" } };
  for (const [path, spec] of specs) {
    const fallback = fallbacks.get(path) as UniversalHandler;
    scope.post(path, routeOptions, (req, reply) => serve(req, reply, spec, fallback, options));
  }
}

async function serve(
  req: FastifyRequest,
  reply: FastifyReply,
  spec: UnarySpec,
  fallback: UniversalHandler,
  options: GrpcShortPathOptions,
): Promise<void> {
  const raw = req.raw as unknown as Http2ServerRequest;
  const values = options.contextValues(req);
  const read = await readUpTo(raw, options.readMaxBytes + 5);
  const answer = read?.whole
    ? await shortAnswer(req, raw, read.bytes, spec, values, options)
    : undefined;
  copyReplyHeaders(reply);
  try {
    if (answer !== undefined) {
      // What universalResponseToNodeResponse writes for one chunk, without its awaits.
      const res = reply.raw as unknown as Http2ServerResponse;
      res.writeHead(200, nodeHeaders(answer.header));
      res.addTrailers(nodeHeaders(answer.trailer));
      if (answer.body === undefined) res.end();
      else res.end(answer.body);
      return;
    }
    // Connect's own handler, as connect-fastify calls it.
    const body = read ? read.replay : raw;
    const request = universalRequestFromNodeRequest(raw, reply.raw as never, body as never, values);
    await universalResponseToNodeResponse(await fallback(request), reply.raw);
  } catch (e) {
    if (ConnectError.from(e).code === Code.Aborted) return;
    req.log.error({ err: e }, `handler for rpc ${spec.method.name} failed`);
  }
}

interface Answer {
  header: Headers;
  body: Uint8Array | undefined;
  trailer: Headers;
}

/** The answer Connect's gRPC handler gives, or undefined to leave the call to it. */
async function shortAnswer(
  req: FastifyRequest,
  raw: Http2ServerRequest,
  body: Uint8Array,
  spec: UnarySpec,
  values: ContextValues,
  options: GrpcShortPathOptions,
): Promise<Answer | undefined> {
  const header = (name: string) => {
    const value = req.headers[name];
    return typeof value === "string" ? value : null;
  };
  const timeout = parseTimeout(header("grpc-timeout"), Number.MAX_SAFE_INTEGER);
  const compression = compressionNegotiate(
    options.acceptCompression,
    header("grpc-encoding"),
    header("grpc-accept-encoding"),
    "grpc-accept-encoding",
  );
  if (timeout.error || compression.error || body.length < 5) return undefined;
  const flags = body[0] as number;
  const length = new DataView(body.buffer, body.byteOffset, 5).getUint32(1);
  if (length !== body.length - 5 || length > options.readMaxBytes || flags > 1) return undefined;
  let bytes = body.subarray(5);
  if (flags === 1) {
    if (compression.request === null) return undefined;
    try {
      bytes = await compression.request.decompress(bytes, options.readMaxBytes);
    } catch {
      return undefined;
    }
  }
  // A message that does not parse is the caller's fault, as on Connect's route (message-check.ts).
  let input: ReturnType<typeof fromBinary> | undefined;
  let unparsed: string | undefined;
  try {
    input = fromBinary(spec.method.input, bytes);
  } catch (e) {
    unparsed = e instanceof Error ? e.message : String(e);
  }

  const call = callSignal(raw, timeout.timeoutMs);
  const context: HandlerContext = {
    service: spec.method.parent,
    method: spec.method,
    requestMethod: "POST",
    protocolName: "grpc",
    url: new URL(raw.url, `http://${raw.authority}`).toString(),
    signal: call.signal,
    timeoutMs: call.timeoutMs,
    requestHeader: requestHeaders(req),
    responseHeader: new Headers({ "content-type": "application/grpc+proto" }),
    responseTrailer: new Headers({ "grpc-status": "0" }),
    values,
  };
  if (compression.response) context.responseHeader.set("grpc-encoding", compression.response.name);
  let out: Uint8Array | undefined;
  try {
    if (input === undefined) {
      recordOutcome(req, { code: "invalid_argument" });
      throw new ConnectError(`parse binary: ${unparsed}`, Code.InvalidArgument);
    }
    const output = await invokeUnaryImplementation(spec, context, input, options.interceptors);
    out = await envelope(toBinary(spec.method.output, output), compression.response, options);
  } catch (e) {
    setTrailerStatus(
      context.responseTrailer,
      e instanceof ConnectError
        ? e
        : new ConnectError("internal error", Code.Internal, undefined, undefined, e),
    );
  } finally {
    call.done();
  }
  return { header: context.responseHeader, body: out, trailer: context.responseTrailer };
}

/** One envelope, compressed as Connect compresses it (at least `compressMinBytes`). */
async function envelope(
  message: Uint8Array,
  compression: Compression | null,
  options: { compressMinBytes: number },
): Promise<Uint8Array> {
  let payload = message;
  let flags = 0;
  if (compression && message.length >= options.compressMinBytes) {
    payload = await compression.compress(message);
    flags = 1;
  }
  const out = Buffer.allocUnsafe(payload.length + 5);
  out[0] = flags;
  out.writeUInt32BE(payload.length, 1);
  out.set(payload, 5);
  return out;
}

/**
 * The call's signal as Connect's handler context has it: aborted when its
 * deadline passes (`deadline_exceeded`) or the client resets the stream
 * before the answer (as connect-node reads the reset code). One controller,
 * and nothing aborted once the call has ended: Connect aborts three, each
 * with a new DOMException, at the end of every call.
 */
function callSignal(raw: Http2ServerRequest, timeoutMs: number | undefined) {
  const controller = new AbortController();
  const deadline = timeoutMs === undefined ? undefined : Math.trunc(Date.now() + timeoutMs);
  const expire = () =>
    controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
  let timer: NodeJS.Timeout | undefined;
  if (timeoutMs !== undefined) {
    if (timeoutMs <= 0) expire();
    else timer = setTimeout(expire, timeoutMs);
  }
  const onClose = () => controller.abort(resetError(raw.stream.rstCode));
  raw.once("close", onClose);
  return {
    signal: controller.signal,
    timeoutMs: () => (deadline === undefined ? undefined : deadline - Date.now()),
    done() {
      clearTimeout(timer);
      raw.off("close", onClose);
    },
  };
}

/** HTTP/2's error codes (RFC 9113, section 7), by number. */
const H2_CODE_NAMES = [
  "NO_ERROR",
  "PROTOCOL_ERROR",
  "INTERNAL_ERROR",
  "FLOW_CONTROL_ERROR",
  "SETTINGS_TIMEOUT",
  "STREAM_CLOSED",
  "FRAME_SIZE_ERROR",
  "REFUSED_STREAM",
  "CANCEL",
  "COMPRESSION_ERROR",
  "CONNECT_ERROR",
  "ENHANCE_YOUR_CALM",
  "INADEQUATE_SECURITY",
  "HTTP_1_1_REQUIRED",
];

/** connect-node's reading of an HTTP/2 reset code. */
function resetError(code: number): ConnectError | undefined {
  const error = (c: Code) =>
    new ConnectError(
      `http/2 stream closed with error code ${H2_CODE_NAMES[code]} (0x${code.toString(16)})`,
      c,
    );
  switch (code) {
    case h2.NGHTTP2_NO_ERROR:
    case h2.NGHTTP2_STREAM_CLOSED:
      return undefined;
    case h2.NGHTTP2_REFUSED_STREAM:
      return error(Code.Unavailable);
    case h2.NGHTTP2_CANCEL:
      return error(Code.Canceled);
    case h2.NGHTTP2_ENHANCE_YOUR_CALM:
      return error(Code.ResourceExhausted);
    case h2.NGHTTP2_INADEQUATE_SECURITY:
    case h2.NGHTTP2_HTTP_1_1_REQUIRED:
      return error(Code.PermissionDenied);
    default:
      return error(Code.Internal);
  }
}

function requestHeaders(req: FastifyRequest): Headers {
  const header = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (k.startsWith(":") || v === undefined) continue;
    if (Array.isArray(v)) for (const e of v) header.append(k, e);
    else header.append(k, String(v));
  }
  return header;
}

/** Headers set on the reply by root hooks (CORS, request id), as connect-fastify copies them. */
function copyReplyHeaders(reply: FastifyReply): void {
  const res = reply.raw as unknown as Http2ServerResponse;
  for (const [key, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) res.setHeader(key, value);
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
