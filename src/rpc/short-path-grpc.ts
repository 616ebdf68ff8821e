import { toBinary } from "@bufbuild/protobuf";
import {
  parseTimeout as parseGrpcTimeout,
  setTrailerStatus,
} from "@connectrpc/connect/protocol-grpc";
import { HEADER_GRPC_STATUS } from "../app/headers.js";
import type { compileBinaryWriter } from "./proto-binary.js";
import {
  type Answer,
  decompress,
  envelope,
  handlerContext,
  header,
  invokeUnary,
  negotiateCompression,
  type Options,
  writeTooLarge,
} from "./short-path-call.js";

type BinaryWriter = NonNullable<ReturnType<typeof compileBinaryWriter>>;

/** A gRPC answer's trailers until an error is written over them. */
const SUCCEEDED = Object.freeze({ [HEADER_GRPC_STATUS]: "0" });

/** A gRPC answer's headers, one object per response encoding (or none), made once. */
const byEncoding = new Map<string | undefined, Readonly<Record<string, string>>>();
function answerHeaders(encoding: string | undefined): Readonly<Record<string, string>> {
  let headers = byEncoding.get(encoding);
  if (headers === undefined) {
    headers = Object.freeze({
      "content-type": "application/grpc+proto",
      ...(encoding === undefined ? {} : { "grpc-encoding": encoding }),
    });
    byEncoding.set(encoding, headers);
  }
  return headers;
}

/** The answer Connect's gRPC handler gives. */
export function grpcAnswer(opt: Options, binary: BinaryWriter | undefined): Answer {
  return async (call) => {
    const { headers, body, spec } = call;
    const timeout = parseGrpcTimeout(header(headers, "grpc-timeout"), opt.maxTimeoutMs);
    const compression = negotiateCompression(call, opt, "grpc-encoding", "grpc-accept-encoding");
    if (timeout.error || compression.error || body.length < 5) return undefined;
    const flags = body[0] as number;
    const length = new DataView(body.buffer, body.byteOffset, 5).getUint32(1);
    if (length !== body.length - 5 || length > opt.readMaxBytes || flags > 1) return undefined;
    if (flags === 1 && compression.request === null) return undefined;
    const bytes = await decompress(flags === 1 ? compression.request : null, body.subarray(5), opt);
    if (bytes === undefined) return undefined;
    const context = handlerContext(
      call,
      "grpc",
      answerHeaders(compression.response?.name),
      SUCCEEDED,
    );
    const result = await invokeUnary(call, context, opt, bytes, (output) => {
      const encoded = binary?.(output) ?? toBinary(spec.method.output, output);
      // Connect's serialization checks the message before its envelope.
      if (encoded.byteLength > opt.writeMaxBytes) throw writeTooLarge(encoded, opt);
      return envelope(encoded, compression.response, opt);
    });
    if ("error" in result) setTrailerStatus(context.responseTrailer, result.error);
    return {
      status: 200,
      header: context.responseHeader,
      body: "out" in result ? result.out : undefined,
      trailer: context.responseTrailer,
    };
  };
}
