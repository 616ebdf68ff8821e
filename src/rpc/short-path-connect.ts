import {
  type createMethodSerializationLookup,
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
  type Answer,
  decompress,
  handlerContext,
  header,
  invokeUnary,
  negotiateCompression,
  type Options,
} from "./short-path-call.js";

type Serialization = ReturnType<typeof createMethodSerializationLookup>;

/** A Connect answer's headers as they begin, one object per content type. */
const PROTO = Object.freeze({ "content-type": contentTypeUnaryProto });
const JSON_TYPE = Object.freeze({ "content-type": contentTypeUnaryJson });
type JsonWriter = ReturnType<typeof compileJsonWriter>;

/** The answer Connect's handler gives a unary Connect POST. */
export function connectAnswer(
  opt: Options,
  serialization: Serialization,
  json: JsonWriter | undefined,
): Answer {
  return async (call) => {
    const { headers, body } = call;
    const binary = header(headers, "content-type")?.toLowerCase() === contentTypeUnaryProto;
    const timeout = parseConnectTimeout(header(headers, "connect-timeout-ms"), opt.maxTimeoutMs);
    const compression = negotiateCompression(call, opt, "content-encoding", "accept-encoding");
    const length = header(headers, "content-length");
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
    const context = handlerContext(call, "connect", binary ? PROTO : JSON_TYPE);
    const result = await invokeUnary(
      call,
      context,
      opt,
      bytes,
      (output) => {
        const text = binary ? undefined : json?.(output);
        const encoded = text === undefined ? undefined : Buffer.from(text);
        return encoded !== undefined && encoded.byteLength <= opt.writeMaxBytes
          ? encoded
          : serialization.getO(binary).serialize(output);
      },
      binary ? undefined : () => serialization.getI(false).parse(bytes),
    );
    let status = 200;
    let out: Uint8Array;
    if ("error" in result) {
      const { error } = result;
      status = codeHttpStatus(error.code);
      context.responseHeader.set("content-type", contentTypeUnaryJson);
      if (!error.isWireError) mergeNonProtocolHeaders(context.responseHeader, error.metadata);
      out = errorToJsonBytes(error, opt.jsonOptions);
    } else {
      out = result.out;
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
  };
}
