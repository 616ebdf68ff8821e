import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import {
  Code,
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
import type { FastifyReply, FastifyRequest } from "fastify";
import { recordOutcome } from "../ops/outcome.js";

/**
 * What the short path's protocol answers share: the call as they see it, the reply they give,
 * and Connect's steps they take in Connect's order (compression's negotiation, decompression,
 * the handler's context, parsing, the handler's run, envelopes, the write limit).
 */

export type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;
export type Options = ReturnType<typeof validateUniversalHandlerOptions>;
type RawRequest = IncomingMessage | Http2ServerRequest;

/** One unary call, its whole body read. */
export interface Call {
  req: FastifyRequest;
  raw: RawRequest;
  res: FastifyReply["raw"];
  body: Uint8Array;
  spec: UnarySpec;
  values: ContextValues;
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
    header(call.req, encoding),
    header(call.req, acceptEncoding),
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
    recordOutcome(call.req, { code: "invalid_argument" });
    const reason = e instanceof Error ? e.message : String(e);
    throw new ConnectError(`parse binary: ${reason}`, Code.InvalidArgument);
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
  return e instanceof ConnectError
    ? e
    : new ConnectError("internal error", Code.Internal, undefined, undefined, e);
}

/**
 * The handler's context, as Connect's has it, but for its signal: the edge's
 * call (edge/call.ts), aborted at the call's one deadline, when its client
 * leaves, and once it has been answered.
 */
export function handlerContext(
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
export function writeTooLarge(message: Uint8Array, opt: { writeMaxBytes: number }): ConnectError {
  return new ConnectError(
    `message size ${message.byteLength} is larger than configured writeMaxBytes ${opt.writeMaxBytes}`,
    Code.ResourceExhausted,
  );
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

export function header(req: FastifyRequest, name: string): string | null {
  const value = req.headers[name];
  return typeof value === "string" ? value : null;
}

export function requestHeaders(req: FastifyRequest): Headers {
  const out = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (k.startsWith(":") || v === undefined) continue;
    if (Array.isArray(v)) for (const e of v) out.append(k, e);
    else out.append(k, String(v));
  }
  return out;
}
