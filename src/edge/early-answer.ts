import type { ServerHttp2Stream } from "node:http2";
import { Code, type ConnectError } from "@connectrpc/connect";
import { codeHttpStatus, codeName } from "../app/connect-codes.js";
import type { AppReply, AppRequest } from "../app-server.js";
import { RETRY_AFTER_SECONDS } from "../ops/admission.js";
import { recordOutcome } from "../ops/outcome.js";
import { deadlineExceeded } from "./call.js";

/** How the REST gateway answers an error (rest/problem.ts `sendProblem`). */
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
    rest(reply, err);
    return;
  }
  recordOutcome(request, { code: codeName(err.code) });
  const type = request.headers["content-type"] ?? "";
  if (type.startsWith("application/grpc")) {
    const headers = {
      "content-type": type.split(";")[0] ?? type,
      "grpc-status": String(err.code),
      "grpc-message": encodeURIComponent(err.rawMessage),
    };
    const raw = request.raw as { stream?: ServerHttp2Stream };
    if (raw.stream !== undefined) {
      // Trailers-only: one HEADERS frame that ends the stream, as gRPC
      // clients expect (an empty DATA after them reads as a broken call).
      reply.hijack();
      if (!raw.stream.destroyed && !raw.stream.headersSent) {
        raw.stream.respond({ ":status": 200, ...headers }, { endStream: true });
      }
      return;
    }
    void reply.code(200).headers(headers).send();
    return;
  }
  for (const [name, value] of err.metadata) reply.header(name, value);
  if (err.code === Code.ResourceExhausted || err.code === Code.Unavailable)
    reply.header("retry-after", String(RETRY_AFTER_SECONDS));
  void reply
    .code(codeHttpStatus(err.code))
    .type("application/json")
    .send(JSON.stringify({ code: codeName(err.code), message: err.rawMessage }));
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
  reply.send(deadlineExceeded());
}
