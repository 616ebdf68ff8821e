import { ConnectError } from "@connectrpc/connect";
import type { App, AppReply, AppRequest } from "../app-server.js";
import type { Authenticator } from "../auth/authenticator.js";
import type { Admission } from "../ops/admission.js";
import { recordOutcome } from "../ops/outcome.js";
import type { RefusalPace } from "../ops/refusal-pace.js";
import { type Call, callerGone, callTimeoutMs, deadlineExceeded, startCall } from "./call.js";
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

export interface ApiCallOptions {
  authenticator: Authenticator;
  admission: Admission;
  /** REQUEST_TIMEOUT_MS: the longest a call may take, unless the client says less. */
  requestTimeoutMs: number;
  /** How refusals are paced, per caller. */
  pace: RefusalPace;
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
 * What every API call gets, REST and RPC alike, from one place: its one
 * deadline (`grpc-timeout`, `connect-timeout-ms` or REQUEST_TIMEOUT_MS,
 * whichever is first) and its signal, answered here if it passes while the
 * request is still arriving; then, before the body is read, the caller
 * (the token's user, or the client's address without a valid token) and
 * the door: a call without a valid token, or one that admission would
 * refuse (the caller over its share, or the queue full), is answered at
 * once, or held first if that caller keeps being refused. Register in each
 * API scope.
 */
export function apiCalls(scope: App, options: ApiCallOptions): void {
  const { authenticator, admission, requestTimeoutMs, pace, restAnswer } = options;
  scope.addHook("onRequest", async (request, reply) => {
    // Until then, a call refused at the door is answered with its refusal.
    let pastDoor = false;
    request.call = startCall(
      reply.raw,
      // The protocol's own deadline header counts for its calls only, not REST's.
      request.routeOptions.config.rpc
        ? callTimeoutMs(request.headers, requestTimeoutMs)
        : requestTimeoutMs,
      admission,
      () => {
        // REST: answered here, whatever its handler still awaits, as Fastify's
        // own handlerTimeout answers; what the handler ends with later is not
        // sent (rest/routes.ts). RPC: Connect's handlers race the same signal
        // and answer themselves, so only a request still arriving is answered here.
        if (pastDoor && !request.routeOptions.config.rpc) answerDeadline(reply);
        else if (!request.raw.complete) answerEarly(request, reply, deadlineExceeded(), restAnswer);
      },
    );
    let refusal: unknown;
    try {
      const userId = await authenticator.authenticate(request.headers.authorization);
      recordOutcome(request, { userId });
      request.callerKey = `user:${userId}`;
    } catch (err) {
      refusal = err;
      request.callerKey = `address:${request.ip}`;
    }
    // Gone already (its FIN came with its request, read by now): nothing more
    // is read or done for it; its call is counted as its response closes.
    if (callerGone(reply.raw)) {
      reply.hijack();
      return reply;
    }
    refusal ??= admission.refusalBeforeRead(request.callerKey);
    if (refusal === undefined) {
      pastDoor = true;
      return;
    }
    await refuse(request, reply, refusal);
    return reply;
  });
  async function refuse(request: AppRequest, reply: AppReply, err: unknown) {
    const holdMs = pace.holdMs(request.callerKey);
    if (holdMs > 0) {
      const call = request.call;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(holdMs, call ? call.remainingMs() : holdMs));
        function done() {
          clearTimeout(timer);
          call?.signal.removeEventListener("abort", done);
          resolve();
        }
        call?.signal.addEventListener("abort", done, { once: true });
      });
    }
    answerEarly(request, reply, ConnectError.from(err), restAnswer);
  }
}
