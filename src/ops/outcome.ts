import type { FastifyRequest } from "fastify";
import { codeNameOfStatus } from "../app/codes.js";
import type { App, AppReply, AppRequest } from "../app-server.js";
import type { Transport } from "./metrics.js";

/**
 * How a request ended, for its log line and metrics: the one owner of these
 * fields. The REST error mapping (rest/problem.ts), the REST auth hook
 * (rest/routes.ts) and the RPC outcome interceptor report through
 * `recordOutcome`; the request log (request-log.ts) reads `outcomeOf`.
 */

declare module "fastify" {
  interface FastifyRequest {
    /** The caller's user id once authenticated ("" before, or if never). */
    userId: string;
    /** The Connect code of the outcome, once known ("" until then). */
    resultCode: string;
  }
}

/** Gives every request of `app` the outcome fields (call on the root, before any route). */
export function decorateOutcome(app: App): void {
  app.decorateRequest("userId", "");
  app.decorateRequest("resultCode", "");
}

/**
 * Records what is known of the outcome: the Connect code, the authenticated
 * user, or both. Only the two fields: requests come typed as `App`'s and as
 * connect-fastify's (Fastify's default server), alike at run time.
 */
export function recordOutcome(
  request: Pick<FastifyRequest, "resultCode" | "userId">,
  outcome: { code?: string; userId?: string },
): void {
  if (outcome.code !== undefined) request.resultCode = outcome.code;
  if (outcome.userId !== undefined) request.userId = outcome.userId;
}

/**
 * The request's Connect code: what the handler or the error mapping said,
 * else "canceled" if the response never ended (the client reset the stream
 * or closed the connection: a cancelled gRPC stream ends no interceptor),
 * else what the HTTP status tells. A gRPC call answered 200 that never
 * reached an interceptor failed in the protocol layer with a status only
 * the trailers know: "unknown".
 */
export function outcomeOf(
  request: AppRequest,
  reply: AppReply,
  transport: Transport,
): { code: string; user: string | undefined } {
  const gone = request.resultCode === "" && !reply.raw.writableEnded;
  return {
    code: gone ? "canceled" : outcomeCode(request.resultCode, reply.statusCode, transport),
    user: request.userId || undefined,
  };
}

/**
 * The Connect code from what is known: `resultCode` if the call or the
 * error mapping said it, else what the HTTP status tells (see `outcomeOf`).
 */
function outcomeCode(resultCode: string, status: number, transport: Transport): string {
  if (resultCode !== "") return resultCode;
  if (status < 400) return transport === "grpc" || transport === "grpc-web" ? "unknown" : "ok";
  return codeNameOfStatus(status) ?? (status < 500 ? "invalid_argument" : "internal");
}
