import type { ServerHttp2Stream } from "node:http2";
import type { FastifyReply, FastifyRequest } from "fastify";
import { type Admission, overloaded, RETRY_AFTER_SECONDS } from "../ops/admission.js";
import { recordOutcome } from "../ops/outcome.js";
import { codeHttpStatus, codeName } from "./connect-code.js";

/** The admission interceptor's refusal, as each protocol writes it. */
const REFUSAL = overloaded();
const GRPC_STATUS = String(REFUSAL.code);
const GRPC_MESSAGE = encodeURIComponent(REFUSAL.rawMessage);
const CONNECT_BODY = JSON.stringify({ code: codeName(REFUSAL.code), message: REFUSAL.rawMessage });

/**
 * A Fastify `onRequest` hook for the admitted RPCs: with every slot busy and
 * the queue full, the call is refused before its request is read, in its
 * own protocol's words: gRPC and gRPC-Web a trailers-only `unavailable`,
 * Connect a 503 with its error JSON. Under sustained overload, reading and
 * decoding the request is most of what a refusal would cost.
 */
export function refuseAtDoor(admission: Admission) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (!admission.refuseIfFull()) return;
    recordOutcome(request, { code: codeName(REFUSAL.code) });
    const type = request.headers["content-type"] ?? "";
    if (type.startsWith("application/grpc")) {
      const headers = {
        "content-type": type.split(";")[0] ?? type,
        "grpc-status": GRPC_STATUS,
        "grpc-message": GRPC_MESSAGE,
      };
      const raw = request.raw as { stream?: ServerHttp2Stream };
      if (raw.stream !== undefined) {
        // Trailers-only: one HEADERS frame that ends the stream, as gRPC
        // clients expect (an empty DATA after them reads as a broken call).
        reply.hijack();
        if (!raw.stream.destroyed) {
          raw.stream.respond({ ":status": 200, ...headers }, { endStream: true });
        }
        return;
      }
      await reply
        .code(200)
        .header("content-type", type.split(";")[0] ?? type)
        .header("grpc-status", GRPC_STATUS)
        .header("grpc-message", GRPC_MESSAGE)
        .send();
      return;
    }
    await reply
      .code(codeHttpStatus(REFUSAL.code))
      .header("retry-after", String(RETRY_AFTER_SECONDS))
      .type("application/json")
      .send(CONNECT_BODY);
  };
}
