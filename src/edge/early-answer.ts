import type { ServerHttp2Stream } from "node:http2";
import type { ConnectError } from "@connectrpc/connect";
import { retryAfterHeaders } from "../app/codes.js";
import { errors, meaningOfError } from "../app/errors.js";
import { HEADER_CONTENT_TYPE, HEADER_GRPC_MESSAGE, HEADER_GRPC_STATUS } from "../app/headers.js";
import type { AppReply, AppRequest } from "../app-server.js";
import { recordOutcome } from "../ops/outcome.js";
import { endUnfinishedRequest } from "./trailers-reset.js";

/** How the REST gateway answers an error (rest/send-problem.ts `sendProblem`). */
export type RestAnswer = (reply: AppReply, err: unknown) => unknown;

/**
 * Answers a call before its handler has it (refused at the door, or its
 * deadline passed while its request was still arriving), in its own
 * protocol's words: gRPC and gRPC-Web a trailers-only status, Connect its
 * error JSON with the HTTP status of the code, REST problem+json. A call
 * already answered, or whose client has gone, gets nothing more.
 */
export function answerEarly(
  request: AppRequest,
  reply: AppReply,
  err: ConnectError,
  rest: RestAnswer,
): void {
  if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) return;
  if (!request.routeOptions.config.rpc) {
    endUnfinishedOnceAnswered(reply);
    rest(reply, err);
    return;
  }
  const meaning = meaningOfError(err);
  recordOutcome(request, { code: meaning.name });
  const type = request.headers[HEADER_CONTENT_TYPE] ?? "";
  if (type.startsWith("application/grpc")) {
    const raw = request.raw as { stream?: ServerHttp2Stream };
    if (raw.stream !== undefined) {
      reply.hijack();
      answerTrailersOnly(raw.stream, type, err);
      return;
    }
    void reply.code(200).headers(grpcStatusHeaders(type, err)).send();
    return;
  }
  for (const [name, value] of err.metadata) reply.header(name, value);
  endUnfinishedOnceAnswered(reply);
  void reply
    .code(meaning.httpStatus)
    .headers(retryAfterHeaders(meaning))
    .type("application/json")
    .send(JSON.stringify({ code: meaning.name, message: err.rawMessage }));
}

/**
 * A gRPC call's error as a trailers-only answer: one HEADERS frame that
 * ends the stream, as gRPC clients expect (an empty DATA after them reads
 * as a broken call); a request still arriving is ended after it. Nothing on
 * a stream already answered or gone.
 */
export function answerTrailersOnly(
  stream: ServerHttp2Stream,
  contentType: string,
  err: ConnectError,
): void {
  if (stream.destroyed || stream.headersSent) return;
  stream.respond({ ":status": 200, ...grpcStatusHeaders(contentType, err) }, { endStream: true });
  endUnfinishedRequest(stream);
}

/** The headers of a gRPC error: its metadata (a 401's www-authenticate), status, message and Retry-After. */
function grpcStatusHeaders(contentType: string, err: ConnectError): Record<string, string> {
  const meaning = meaningOfError(err);
  return {
    ...Object.fromEntries(err.metadata),
    [HEADER_CONTENT_TYPE]: contentType.split(";")[0] ?? contentType,
    [HEADER_GRPC_STATUS]: String(meaning.grpcStatus),
    [HEADER_GRPC_MESSAGE]: grpcMessage(err.rawMessage),
    ...retryAfterHeaders(meaning),
  };
}

/** What grpc-message must not hold as it is (gRPC's PROTOCOL-HTTP2.md): "%" and all but printable ASCII. */
const NOT_PRINTABLE = /[^\x20-\x24\x26-\x7e]+/g;

/**
 * gRPC's percent-encoding of a status message: only "%" and the UTF-8 bytes of
 * what is not printable ASCII. encodeURIComponent would also encode ":" and
 * ",", which grpc-js (decodeURI) then shows as "%3A" and "%2C".
 */
function grpcMessage(text: string): string {
  return text.replace(NOT_PRINTABLE, (run) =>
    Array.from(Buffer.from(run), (b) => `%${b.toString(16).toUpperCase().padStart(2, "0")}`).join(
      "",
    ),
  );
}

/**
 * Answers a REST call whose deadline has passed, now: 504 problem+json
 * through its scope's error handler (logged as any failure is), as Fastify's
 * handlerTimeout does. An answer already begun is cut off; one sent, left.
 */
export function answerDeadline(reply: AppReply): void {
  if (reply.sent || reply.raw.destroyed) return;
  if (reply.raw.headersSent) {
    reply.raw.destroy();
    return;
  }
  endUnfinishedOnceAnswered(reply);
  reply.send(errors.deadlineExceeded());
}

/**
 * Over HTTP/2, a request still arriving once an answer Fastify sends is out
 * is ended (edge/trailers-reset.ts); over HTTP/1.1 the connection closes
 * after it (edge/one-port.ts).
 */
function endUnfinishedOnceAnswered(reply: AppReply): void {
  const stream = (reply.raw as { stream?: ServerHttp2Stream }).stream;
  if (stream !== undefined) reply.raw.once("finish", () => endUnfinishedRequest(stream));
}
