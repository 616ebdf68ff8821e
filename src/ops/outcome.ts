import type { FastifyRequest } from "fastify";
import { meaningOfStatus } from "../app/codes.js";
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
 * The request's Connect code: "canceled" if the response never ended, or
 * if the call failed and the client had reset the stream or closed the
 * connection (a cancelled gRPC stream ends no interceptor; an error written
 * after a reset answers nobody), else what the handler or the error mapping said,
 * else what the HTTP status tells. A gRPC call answered 200 that never
 * reached an interceptor failed in the protocol layer with a status only
 * the trailers know: "unknown".
 */
export function outcomeOf(
  request: AppRequest,
  reply: AppReply,
  transport: Transport,
): { code: string; user: string | undefined } {
  return {
    code: callCode({
      said: request.resultCode,
      answered: reply.raw.writableEnded,
      left: clientLeft(request),
      status: reply.statusCode,
      transport,
    }),
    user: request.userId || undefined,
  };
}

/**
 * A call's Connect code for its log line and metrics, whatever carried it
 * (see `outcomeOf`): "canceled" if it was never answered, or failed after
 * its client left; else what the call said, else what the HTTP status tells.
 */
export function callCode(call: {
  /** What the call or the error mapping said ("" if nothing). */
  said: string;
  /** Whether its answer was all written. */
  answered: boolean;
  /** Whether its client reset its stream or closed its connection. */
  left: boolean;
  status: number;
  transport: Transport;
}): string {
  const gone = (call.said === "" && !call.answered) || (call.said !== "ok" && call.left);
  return gone ? "canceled" : outcomeCode(call.said, call.status, call.transport);
}

/** Whether a client reset `rstCode` means it left: any code but NO_ERROR (RFC 9113 §7). */
export function resetByClient(rstCode: number | undefined): boolean {
  return rstCode !== undefined && rstCode !== H2_NO_ERROR;
}

/**
 * Whether the client reset the request's HTTP/2 stream (any code but
 * NO_ERROR, which ends a stream answered early) or closed its HTTP/1.1
 * connection before the request was read: whatever was answered after that
 * (an error about a body cut short, a status) answered nobody.
 */
function clientLeft(request: AppRequest): boolean {
  const raw = request.raw as { aborted?: boolean; stream?: { rstCode?: number } };
  return raw.aborted === true || resetByClient(raw.stream?.rstCode);
}

/** RST_STREAM NO_ERROR (RFC 9113 §7). */
const H2_NO_ERROR = 0;

/**
 * The Connect code from what is known: `resultCode` if the call or the
 * error mapping said it, else what the HTTP status tells (see `outcomeOf`).
 */
function outcomeCode(resultCode: string, status: number, transport: Transport): string {
  if (resultCode !== "") return resultCode;
  if (status < 400) return transport === "grpc" || transport === "grpc-web" ? "unknown" : "ok";
  return meaningOfStatus(status)?.name ?? (status < 500 ? "invalid_argument" : "internal");
}
