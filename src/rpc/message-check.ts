import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { type DescMessage, type DescService, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { FastifyRequest } from "fastify";
import { recordOutcome } from "../ops/outcome.js";
import { readUpTo } from "./read-body.js";

/**
 * Why a unary call's binary request message does not parse (protobuf-es's
 * words), set by `checkRequestMessage`; undefined for every other call.
 */
export const unparsedMessageKey = createContextKey<string | undefined>(undefined, {
  description: "why the call's request message does not parse",
});

/** gRPC and gRPC-Web envelopes: a flags byte and a 4-byte length. */
const ENVELOPE_HEADER = 5;
const COMPRESSED_FLAG = 0b1;
/** An envelope holding an empty, uncompressed message. */
const EMPTY_ENVELOPE = new Uint8Array(ENVELOPE_HEADER);

const unparsed = new WeakMap<object, string>();

/**
 * A `preHandler` that parses a unary call's binary message itself: connect-es
 * answers an unparsable one with `internal` before any interceptor runs, while
 * it is the caller's fault (`invalid_argument`, as connect-go answers). Connect
 * gets an empty message and `unparsedMessageInterceptor` ends the call; bodies
 * this cannot judge (too large, unknown compression, JSON) pass through.
 */
export function checkRequestMessage(services: DescService[], readMaxBytes: number) {
  const inputs = new Map<string, DescMessage>();
  for (const service of services) {
    for (const method of service.methods) {
      if (method.methodKind === "unary")
        inputs.set(`/${service.typeName}/${method.name}`, method.input);
    }
  }
  return async (request: FastifyRequest): Promise<void> => {
    const input = inputs.get(request.routeOptions.url ?? "");
    const framing = framingOf(request.headers["content-type"]);
    if (input === undefined || framing === undefined || request.method !== "POST") return;
    const read = await readUpTo(request.raw, readMaxBytes + ENVELOPE_HEADER);
    if (read === undefined) return; // The client went away: Connect's read of the rest tells.
    request.body = read.replay();
    if (!read.whole) return;
    const message =
      framing === "envelope"
        ? unwrap(read.bytes, header(request, "grpc-encoding"), readMaxBytes)
        : decompress(read.bytes, header(request, "content-encoding"), readMaxBytes);
    if (message === undefined) return;
    try {
      fromBinary(input, message);
    } catch (err) {
      unparsed.set(request.raw, err instanceof Error ? err.message : String(err));
      recordOutcome(request, { code: "invalid_argument" });
      // Connect reads the replacement, not the client's bytes: their length
      // and compression no longer apply.
      delete request.raw.headers["content-length"];
      if (framing === "envelope") {
        request.body = once(EMPTY_ENVELOPE);
      } else {
        delete request.raw.headers["content-encoding"];
        request.body = once(new Uint8Array(0));
      }
    }
  };
}

/** Why the message of the call on `raw` does not parse, if `checkRequestMessage` found so. */
export function unparsedMessage(raw: object): string | undefined {
  return unparsed.get(raw);
}

/** Ends a call whose request message does not parse with `invalid_argument` (see `checkRequestMessage`). */
export function unparsedMessageInterceptor(): Interceptor {
  return (next) => (req) => {
    const reason = req.contextValues.get(unparsedMessageKey);
    if (reason === undefined) return next(req);
    throw new ConnectError(`parse binary: ${reason}`, Code.InvalidArgument);
  };
}

/** How the binary message sits in the body: alone (Connect unary) or in an envelope (gRPC, gRPC-Web). */
function framingOf(contentType: string | undefined): "raw" | "envelope" | undefined {
  const type = contentType?.toLowerCase();
  if (type === "application/proto") return "raw";
  if (type !== undefined && /^application\/grpc(-web)?(\+proto)?$/.test(type)) return "envelope";
  return undefined;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === "string" ? value : undefined;
}

/** The message of a body that is exactly one envelope, decompressed; else undefined. */
function unwrap(body: Uint8Array, encoding: string | undefined, max: number) {
  if (body.length < ENVELOPE_HEADER) return undefined;
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const flags = view.getUint8(0);
  if (view.getUint32(1) !== body.length - ENVELOPE_HEADER || (flags & ~COMPRESSED_FLAG) !== 0) {
    return undefined;
  }
  const message = body.subarray(ENVELOPE_HEADER);
  return flags & COMPRESSED_FLAG ? decompress(message, encoding, max) : message;
}

/** `bytes` decompressed with `encoding` (gzip, br, identity), or undefined if that fails. */
function decompress(bytes: Uint8Array, encoding: string | undefined, max: number) {
  try {
    switch (encoding?.toLowerCase()) {
      case undefined:
      case "identity":
        return bytes;
      case "gzip":
        return gunzipSync(bytes, { maxOutputLength: max });
      case "br":
        return brotliDecompressSync(bytes, { maxOutputLength: max });
      default:
        return undefined;
    }
  } catch {
    return undefined;
  }
}

async function* once(bytes: Uint8Array) {
  yield bytes;
}
