import type { App, AppReply, AppRequest } from "../app-server.js";
import { recordOutcome } from "../ops/outcome.js";
import type { Call } from "./call.js";
import { type Arrival, type DoorOptions, enterCall } from "./call-door.js";
import { type LimitSettings, requestReadLimitMs } from "./call-limits.js";
import { answerDeadline, answerEarly, type RestAnswer } from "./early-answer.js";

declare module "fastify" {
  interface FastifyInstance {
    /** How long a request may take to arrive, head and body (edge/call-limits.ts). */
    requestReadLimitMs: number;
  }
  interface FastifyRequest {
    /** The API call of this request (edge/api-calls.ts); null outside the API's scopes. */
    call: Call | null;
    /** Who calls, for fair admission: the token's user, or the client's address. */
    callerKey: string;
  }
}

export interface ApiCallOptions extends DoorOptions {
  /** How a REST call's refusal is written (problem+json). */
  restAnswer: RestAnswer;
}

/**
 * Gives every request the call fields, and the app the read limit its
 * calls' deadlines call for (on the root, before any route).
 */
export function decorateCalls(app: App, settings: LimitSettings): void {
  app.decorate("requestReadLimitMs", requestReadLimitMs(settings));
  app.decorateRequest("call", null);
  app.decorateRequest("callerKey", "");
}

/**
 * Brings every API call of `scope`, REST and RPC alike, through the door
 * (edge/call-door.ts) before its body is read. Register in each API scope.
 */
export function apiCalls(scope: App, options: ApiCallOptions): void {
  scope.addHook("onRequest", async (request, reply) => {
    const entered = await enterCall(
      arrivalOf(request, reply, options.restAnswer),
      options,
      (call) => {
        request.call = call;
      },
    );
    if (entered.userId !== undefined) recordOutcome(request, { userId: entered.userId });
    request.callerKey = entered.callerKey;
    if (entered.through) return;
    // Nobody to answer: nothing more is done for it; it is counted as its response closes.
    if (entered.left) {
      reply.hijack();
      // Ended now, its connection's close has no request of it to abort
      // (Node makes each such abort an error with its stack written out).
      request.raw.destroy();
    }
    return reply;
  });
}

/** A Fastify request as the door sees it. */
function arrivalOf(request: AppRequest, reply: AppReply, restAnswer: RestAnswer): Arrival {
  const rpc = request.routeOptions.config.rpc === true;
  return {
    answering: reply.raw,
    headers: request.headers,
    rpc,
    ip: () => request.ip,
    complete: () => request.raw.complete,
    answerEarly: (err) => answerEarly(request, reply, err, restAnswer),
    answerDeadline: () => answerDeadline(reply),
  };
}
