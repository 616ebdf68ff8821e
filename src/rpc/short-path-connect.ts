import {
  compressionNegotiate,
  type createMethodSerializationLookup,
  invokeUnaryImplementation,
  mergeNonProtocolHeaders,
} from "@connectrpc/connect/protocol";
import {
  contentTypeUnaryJson,
  contentTypeUnaryProto,
  errorToJsonBytes,
  parseTimeout as parseConnectTimeout,
  trailerMux,
} from "@connectrpc/connect/protocol-connect";
import { codeHttpStatus } from "../app/codes.js";
import type { compileJsonWriter } from "./proto-json.js";
import {
  asConnectError,
  type Call,
  decompress,
  handlerContext,
  header,
  type Options,
  parseBinary,
  type Reply,
} from "./short-path-call.js";

type Serialization = ReturnType<typeof createMethodSerializationLookup>;
type JsonWriter = ReturnType<typeof compileJsonWriter>;

/** The answer Connect's handler gives a unary Connect POST. */
export async function connectAnswer(
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
