import type { toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  compressionNegotiate,
  createMethodSerializationLookup,
  invokeUnaryImplementation,
  validateReadWriteMaxBytes,
} from "@connectrpc/connect/protocol";
import {
  codeToHttpStatus,
  errorToJsonBytes,
  parseTimeout,
} from "@connectrpc/connect/protocol-connect";
import type { UnaryPathOptions } from "./grpc-unary.js";
import { binaryEncoderFor } from "./session-binary.js";
import { jsonEncoderFor } from "./session-json.js";
import {
  callError,
  type UnaryPath,
  type UnarySpec,
  unaryContext,
  unparsedMessage,
} from "./unary-call.js";

/**
 * A unary Connect-protocol POST (`application/json` or `application/proto`)
 * the way Connect's own unary handler answers it, with Connect's own
 * serialization, interceptors, `invokeUnaryImplementation`, error JSON and
 * HTTP status, but without the request adapter's and handler context's
 * AbortControllers and the async iterables around one buffer.
 *
 * It leaves to Connect's handler (returns undefined before anything runs)
 * any call it would not answer exactly alike: another content type (a
 * charset parameter, say), a compressed request, a bad `connect-timeout-ms`,
 * an unknown accepted encoding, a body over `readMaxBytes`, a
 * `content-length` that does not match the body. A message that does not
 * parse is answered here: `invalid_argument` (see `unparsedMessage`).
 */
export function connectUnaryPath(
  spec: UnarySpec,
  interceptors: Interceptor[],
  options: UnaryPathOptions,
): UnaryPath {
  const serialization = createMethodSerializationLookup(
    spec.method,
    undefined,
    options.jsonOptions,
    validateReadWriteMaxBytes(options.readMaxBytes, undefined, options.compressMinBytes),
  );
  // Our hot responses have hand-written encoders (the same bytes); others keep Connect's.
  const binaryOut = binaryEncoderFor(spec.method.output);
  const jsonOut = jsonEncoderFor(spec.method.output);
  const serialize = (binary: boolean, output: Parameters<typeof toBinary>[1]): Uint8Array => {
    try {
      if (binary && binaryOut) return binaryOut(output, 0);
      if (!binary && jsonOut) return Buffer.from(jsonOut(output));
    } catch (e) {
      // As Connect's serializers report a message they cannot encode.
      if (!binary) throw ConnectError.from(e, Code.Internal);
      const m = e instanceof Error ? e.message : String(e);
      throw new ConnectError(`serialize binary: ${m}`, Code.Internal);
    }
    return serialization.getO(binary).serialize(output);
  };
  return async (call) => {
    const type = call.header.get("content-type");
    if (type !== "application/json" && type !== "application/proto") return undefined;
    const binary = type === "application/proto";
    const encoding = call.header.get("content-encoding");
    if (encoding !== null && encoding !== "identity") return undefined;
    const timeout = parseTimeout(call.header.get("connect-timeout-ms"), Number.MAX_SAFE_INTEGER);
    const compression = compressionNegotiate(
      options.acceptCompression,
      encoding,
      call.header.get("accept-encoding"),
      "accept-encoding",
    );
    const length = call.header.get("content-length");
    if (
      timeout.error ||
      compression.error ||
      call.body.length > options.readMaxBytes ||
      (length !== null && length !== String(call.body.length))
    ) {
      return undefined;
    }
    const header = new Headers({ "content-type": type });
    const trailer = new Headers();
    let status = 200;
    const fail = (error: ConnectError) => {
      status = codeToHttpStatus(error.code);
      header.set("content-type", "application/json");
      error.metadata.forEach((value, key) => {
        header.set(key, value);
      });
      return errorToJsonBytes(error, undefined);
    };
    const run = async (): Promise<Uint8Array> => {
      let input: ReturnType<ReturnType<typeof serialization.getI>["parse"]>;
      try {
        input = serialization.getI(binary).parse(call.body);
      } catch (e) {
        return fail(unparsedMessage(call, ConnectError.from(e)));
      }
      const { context, cleanup } = unaryContext(
        spec,
        "connect",
        call,
        timeout.timeoutMs,
        header,
        trailer,
      );
      try {
        const output = await invokeUnaryImplementation(spec, context, input, interceptors);
        return serialize(binary, output);
      } catch (err) {
        return fail(callError(err));
      } finally {
        cleanup();
      }
    };
    let body = await run();
    if (compression.response && body.byteLength >= options.compressMinBytes) {
      body = await compression.response.compress(body);
      header.set("content-encoding", compression.response.name);
    }
    // trailerMux's result, written into `header` (the call is over) instead of a copy.
    trailer.forEach((value, key) => {
      header.append(`trailer-${key}`, value);
    });
    header.set("content-length", String(body.byteLength));
    return { status, header, body };
  };
}
