import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
} from "@connectrpc/connect";
import {
  type Compression,
  compressionNegotiate,
  invokeUnaryImplementation,
} from "@connectrpc/connect/protocol";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";

/** A unary gRPC call's answer: HTTP/2 headers, one message (maybe none), trailers. */
export interface GrpcUnaryAnswer {
  header: Headers;
  body: Uint8Array | undefined;
  trailer: Headers;
}

export interface GrpcUnaryCall {
  url: string;
  header: Headers;
  /** The whole request body. */
  body: Uint8Array;
  signal: AbortSignal;
  contextValues: ContextValues;
}

/**
 * Unary gRPC (binary protobuf) without Connect's streaming pipeline: Connect
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
 * `application/grpc` or `application/grpc+proto`, a valid `grpc-timeout`, a
 * known encoding, a message that parses. Anything else returns undefined
 * before any interceptor or handler runs, and Connect's own handler answers.
 */
export function grpcUnaryPath(
  spec: Extract<MethodImplSpec, { kind: "unary" }>,
  interceptors: Interceptor[],
  options: { readMaxBytes: number; compressMinBytes: number; acceptCompression: Compression[] },
): (call: GrpcUnaryCall) => Promise<GrpcUnaryAnswer | undefined> {
  const { method } = spec;
  return async (call) => {
    const type = call.header.get("content-type");
    if (type !== "application/grpc" && type !== "application/grpc+proto") return undefined;
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
    let input: ReturnType<typeof fromBinary>;
    try {
      let bytes = body.subarray(5);
      if (flags === 1) {
        if (compression.request === null) return undefined;
        bytes = await compression.request.decompress(bytes, options.readMaxBytes);
      }
      input = fromBinary(method.input, bytes);
    } catch {
      return undefined;
    }

    const header = new Headers({ "content-type": "application/grpc+proto" });
    if (compression.response) header.set("grpc-encoding", compression.response.name);
    const trailer = new Headers({ "grpc-status": "0" });
    const signal = deadlineSignal(call.signal, timeout.timeoutMs);
    const deadline = timeout.timeoutMs === undefined ? 0 : Date.now() + timeout.timeoutMs;
    const context: HandlerContext = {
      method,
      service: method.parent,
      requestMethod: "POST",
      protocolName: "grpc",
      url: call.url,
      signal: signal.signal,
      timeoutMs: () => (deadline === 0 ? undefined : deadline - Date.now()),
      requestHeader: call.header,
      responseHeader: header,
      responseTrailer: trailer,
      values: call.contextValues,
    };
    try {
      const output = await invokeUnaryImplementation(spec, context, input, interceptors);
      let bytes = toBinary(method.output, output);
      let flag = 0;
      if (compression.response && bytes.length >= options.compressMinBytes) {
        bytes = await compression.response.compress(bytes);
        flag = 1;
      }
      const framed = new Uint8Array(bytes.length + 5);
      framed[0] = flag;
      new DataView(framed.buffer).setUint32(1, bytes.length);
      framed.set(bytes, 5);
      return { header, body: framed, trailer };
    } catch (err) {
      setTrailerStatus(
        trailer,
        err instanceof ConnectError
          ? err
          : new ConnectError("internal error", Code.Internal, undefined, undefined, err),
      );
      return { header, body: undefined, trailer };
    } finally {
      signal.cleanup();
    }
  };
}

/**
 * The call's signal, or with a client deadline, one that also aborts then:
 * an AbortController and a timer only for calls that have a deadline.
 */
function deadlineSignal(
  request: AbortSignal,
  timeoutMs: number | undefined,
): { signal: AbortSignal; cleanup: () => void } {
  if (timeoutMs === undefined) return { signal: request, cleanup: () => {} };
  const controller = new AbortController();
  const expire = () =>
    controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
  const forward = () => controller.abort(request.reason);
  const timer = timeoutMs <= 0 ? undefined : setTimeout(expire, timeoutMs);
  if (timeoutMs <= 0) expire();
  if (request.aborted) forward();
  else request.addEventListener("abort", forward, { once: true });
  return {
    signal: controller.signal,
    cleanup() {
      clearTimeout(timer);
      request.removeEventListener("abort", forward);
    },
  };
}
