import type { JsonReadOptions, JsonWriteOptions } from "@bufbuild/protobuf";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  type Compression,
  compressionNegotiate,
  invokeUnaryImplementation,
} from "@connectrpc/connect/protocol";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { trailerFlag, trailerSerialize } from "@connectrpc/connect/protocol-grpc-web";
import { binaryEncoderFor } from "./session-binary.js";
import {
  callError,
  type UnaryAnswer,
  type UnaryPath,
  type UnarySpec,
  unaryContext,
  unparsedMessage,
} from "./unary-call.js";

export interface UnaryPathOptions {
  readMaxBytes: number;
  compressMinBytes: number;
  acceptCompression: Compression[];
  /** How Connect's JSON is read (connect-unary.ts), as the router reads it. */
  jsonOptions?: Partial<JsonReadOptions & JsonWriteOptions>;
}

/**
 * Unary gRPC and gRPC-Web (binary protobuf) without Connect's streaming pipeline: Connect
 * runs every call, unary or not, through about ten chained async generators
 * (envelope split, decompress, parse, invoke, serialize, compress, join,
 * catch) plus a handler context with three AbortControllers, aborted with an
 * error object at the end of every call. Here the request is one buffer, so
 * each step is a plain call: the same Connect pieces (its interceptors and
 * `invokeUnaryImplementation`, its compression negotiation, timeout parsing
 * and trailer status) in the same order, with the same bytes out.
 *
 * It only takes what it answers exactly as Connect would: a body of exactly
 * one well-formed envelope within `readMaxBytes`, a content type of
 * `application/grpc` or `application/grpc+proto` (gRPC-Web: the same with
 * `-web`, the trailers as the body's last envelope), a valid `grpc-timeout`, a
 * known encoding. Anything else returns undefined before any interceptor or
 * handler runs, and Connect's own handler answers. A message that does not
 * parse is answered here: `invalid_argument` (see `unparsedMessage`).
 */
export function grpcUnaryPath(
  spec: UnarySpec,
  interceptors: Interceptor[],
  options: UnaryPathOptions,
): UnaryPath {
  const { method } = spec;
  // Our hot responses have a hand-written encoder (same bytes, a tenth of the CPU).
  const encode =
    binaryEncoderFor(method.output) ??
    ((message: Parameters<typeof toBinary>[1], reserve: number) => {
      const bytes = toBinary(method.output, message);
      const out = Buffer.allocUnsafe(bytes.length + reserve);
      out.set(bytes, reserve);
      return out;
    });
  return async (call) => {
    const type = call.header.get("content-type");
    const web = type === "application/grpc-web" || type === "application/grpc-web+proto";
    if (!web && type !== "application/grpc" && type !== "application/grpc+proto") return undefined;
    const timeout = parseTimeout(call.header.get("grpc-timeout"), Number.MAX_SAFE_INTEGER);
    const compression = compressionNegotiate(
      options.acceptCompression,
      call.header.get("grpc-encoding"),
      call.header.get("grpc-accept-encoding"),
      "grpc-accept-encoding",
    );
    const body = call.body;
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

    const header = new Headers({
      "content-type": web ? "application/grpc-web+proto" : "application/grpc+proto",
    });
    if (compression.response) header.set("grpc-encoding", compression.response.name);
    const trailer = new Headers({ "grpc-status": "0" });
    // gRPC-Web sends the trailers as the body's last envelope.
    const answer = async (framed: Buffer | undefined): Promise<UnaryAnswer> => {
      if (!web) return { status: 200, header, body: framed, trailer };
      const fields = trailerSerialize(trailer);
      const framedFields = Buffer.allocUnsafe(fields.length + 5);
      framedFields.set(fields, 5);
      const last = await envelope(framedFields, trailerFlag, compression.response, options);
      return { status: 200, header, body: framed ? Buffer.concat([framed, last]) : last };
    };
    let input: ReturnType<typeof fromBinary>;
    try {
      input = fromBinary(method.input, bytes);
    } catch (e) {
      // In the words of Connect's binary serialization.
      const m = e instanceof Error ? e.message : String(e);
      setTrailerStatus(trailer, unparsedMessage(call, new ConnectError(`parse binary: ${m}`)));
      return answer(undefined);
    }
    const { context, cleanup } = unaryContext(
      spec,
      web ? "grpc-web" : "grpc",
      call,
      timeout.timeoutMs,
      header,
      trailer,
    );
    try {
      const output = await invokeUnaryImplementation(spec, context, input, interceptors);
      // The message is written after five free bytes: the envelope goes there.
      return answer(await envelope(encode(output, 5), 0, compression.response, options));
    } catch (err) {
      setTrailerStatus(trailer, callError(err));
      return answer(undefined);
    } finally {
      cleanup();
    }
  };
}

/**
 * `framed` (its payload after five free bytes) as one envelope with `flag`:
 * compressed, and flagged so, when `compression` is negotiated and the
 * payload is at least `compressMinBytes`, as Connect's envelopes are.
 */
async function envelope(
  framed: Buffer,
  flag: number,
  compression: Compression | null,
  options: { compressMinBytes: number },
): Promise<Buffer> {
  let out = framed;
  let flags = flag;
  if (compression && framed.length - 5 >= options.compressMinBytes) {
    const bytes = await compression.compress(framed.subarray(5));
    out = Buffer.allocUnsafe(bytes.length + 5);
    out.set(bytes, 5);
    flags |= 1;
  }
  out[0] = flags;
  out.writeUInt32BE(out.length - 5, 1);
  return out;
}
