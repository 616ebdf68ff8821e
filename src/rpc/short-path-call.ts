import type { IncomingHttpHeaders } from "node:http";
import { fromBinary } from "@bufbuild/protobuf";
import {
  ConnectError,
  type ContextValues,
  type HandlerContext,
  type MethodImplSpec,
} from "@connectrpc/connect";
import {
  type Compression,
  compressionNegotiate,
  invokeUnaryImplementation,
  type validateUniversalHandlerOptions,
} from "@connectrpc/connect/protocol";
import { errors } from "../app/errors.js";
import type { Call as EdgeCall } from "../edge/call.js";
import { AnswerHeaders, RequestHeaders } from "./lazy-headers.js";

/**
 * What the short path's protocol answers share: the call as they see it, the reply they give,
 * and Connect's steps they take in Connect's order (compression's negotiation, decompression,
 * the handler's context, parsing, the handler's run, envelopes, the write limit).
 */

export type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;
export type Options = ReturnType<typeof validateUniversalHandlerOptions>;

/** Which handler answered a call of our unary paths (the differential test's question). */
export type ServedBy = "short path" | "grpc stream" | "connect";

/**
 * One unary call, its whole body read: what the protocols' answers need of
 * it, from a Fastify route (rpc/unary-short-path.ts) or an HTTP/2 stream
 * (rpc/grpc-streams.ts) alike.
 */
export interface Call {
  headers: IncomingHttpHeaders;
  /** The call's URL, as connect-node builds it. */
  url(): string;
  /** The edge's call (edge/call.ts): its deadline and its signal. */
  edge: EdgeCall;
  body: Uint8Array;
  spec: UnarySpec;
  values: ContextValues;
  /** Records how the call ended where no interceptor does (a message that does not parse). */
  settle(code: string): void;
}

/** The answer to write: status, headers, body, and trailers (gRPC). */
export interface Reply {
  status: number;
  header: Headers;
  body: Uint8Array | undefined;
  trailer?: Headers;
}

/** What a protocol answers a call, or undefined to leave the call to Connect's handler. */
export type Answer = (call: Call) => Promise<Reply | undefined>;

/**
 * Connect's choice of the request's and the answer's compression, from the protocol's two
 * headers: `content-encoding` and `accept-encoding` for Connect, their `grpc-` names for gRPC.
 */
export function negotiateCompression(
  call: Call,
  opt: Options,
  encoding: "content-encoding" | "grpc-encoding",
  acceptEncoding: "accept-encoding" | "grpc-accept-encoding",
) {
  return compressionNegotiate(
    opt.acceptCompression,
    header(call.headers, encoding),
    header(call.headers, acceptEncoding),
    acceptEncoding,
  );
}

/** `bytes` decompressed (as they are, with no compression); undefined if they do not decompress. */
export async function decompress(
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
    call.settle("invalid_argument");
    const reason = e instanceof Error ? e.message : String(e);
    throw errors.parseBinary(reason);
  }
}

type Output = Awaited<ReturnType<typeof invokeUnaryImplementation>>;

/**
 * Connect's steps once a unary call's body is read and decompressed: the request message
 * parsed (binary, unless `parseJson` is given), the implementation run through the
 * interceptors, its output encoded; the error of whichever step failed, as a ConnectError.
 */
export async function invokeUnary(
  call: Call,
  context: HandlerContext,
  opt: Options,
  bytes: Uint8Array,
  encode: (output: Output) => Uint8Array | Promise<Uint8Array>,
  parseJson?: () => Parameters<typeof invokeUnaryImplementation>[2],
): Promise<{ out: Uint8Array } | { error: ConnectError }> {
  try {
    const input = parseJson ? parseJson() : parseBinary(call, bytes);
    const output = await invokeUnaryImplementation(call.spec, context, input, opt.interceptors);
    return { out: await encode(output) };
  } catch (e) {
    return { error: asConnectError(e) };
  }
}

function asConnectError(e: unknown): ConnectError {
  return e instanceof ConnectError ? e : errors.internal(e);
}

/**
 * The handler's context, as Connect's has it, but for its signal: the edge's
 * call (edge/call.ts), aborted at the call's one deadline, when its client
 * leaves, and once it has been answered.
 */
export function handlerContext(
  call: Call,
  protocolName: string,
  /** The answer's headers and trailers to begin with: constants, never written to. */
  responseHeader: Readonly<Record<string, string>>,
  responseTrailer: Readonly<Record<string, string>> = NONE,
): HandlerContext {
  const { spec, edge } = call;
  return {
    service: spec.method.parent,
    method: spec.method,
    requestMethod: "POST",
    protocolName,
    url: call.url(),
    signal: edge.signal,
    timeoutMs: edge.remainingMs,
    requestHeader: new RequestHeaders(call.headers),
    responseHeader: new AnswerHeaders(responseHeader),
    responseTrailer: new AnswerHeaders(responseTrailer),
    values: call.values,
  };
}

const NONE: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The call's URL as connect-node builds it, from its scheme, authority and
 * path. A method's path from one host is the same text call after call:
 * parsed once.
 */
export function callUrl(encrypted: boolean, authority: string | undefined, path: string): string {
  const base = `${encrypted ? "https" : "http"}://${authority}`;
  const key = `${base} ${path}`;
  let url = urls.get(key);
  if (url === undefined) {
    url = new URL(path, base).toString();
    if (urls.size >= URLS_KEPT) urls.clear();
    urls.set(key, url);
  }
  return url;
}

const urls = new Map<string, string>();
const URLS_KEPT = 1000;

/** The error Connect's serialization raises for a message over `writeMaxBytes`. */
export function writeTooLarge(message: Uint8Array, opt: { writeMaxBytes: number }): ConnectError {
  return errors.writeTooLarge(message.byteLength, opt.writeMaxBytes);
}

/** One envelope, compressed as Connect compresses it (at least `compressMinBytes`). */
export async function envelope(
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

export function header(headers: IncomingHttpHeaders, name: string): string | null {
  const value = headers[name];
  return typeof value === "string" ? value : null;
}
