import { ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { codeToHttpStatus, codeToString } from "@connectrpc/connect/protocol-connect";
import type { FastifyRequest } from "fastify";
import type { LogFailure } from "../ops/failure-log.js";
import { recordOutcome } from "../ops/outcome.js";
import { userIdKey } from "./auth-interceptor.js";

/** The Fastify request under a Connect call (set by the plugin's `contextValues`). */
export const fastifyRequestKey = createContextKey<FastifyRequest | undefined>(undefined, {
  description: "the Fastify request of the call",
});

/**
 * Tells the request log and metrics how a call ended: its Connect code and
 * its user. Put it first (outermost) so it sees errors of every interceptor
 * after it, authentication included. Streams report when they end.
 * Failures answered 5xx go to `logFailure` (ours with their stack, shed
 * load briefly and rate-limited).
 */
export function outcomeInterceptor(logFailure?: LogFailure): Interceptor {
  return (next) => async (req) => {
    const request = req.contextValues.get(fastifyRequestKey);
    const settle = (code: string, err?: unknown) => {
      if (request === undefined) return;
      recordOutcome(request, { code, userId: req.contextValues.get(userIdKey) });
      if (err === undefined) return;
      const status = codeToHttpStatus(ConnectError.from(err).code);
      if (status >= 500) logFailure?.(request.log, err, status);
    };
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (err) {
      settle(codeToString(ConnectError.from(err).code), err);
      throw err;
    }
    if (!res.stream) {
      settle("ok");
      return res;
    }
    const messages = res.message;
    return {
      ...res,
      message: (async function* () {
        try {
          yield* messages;
          settle("ok");
        } catch (err) {
          settle(codeToString(ConnectError.from(err).code), err);
          throw err;
        }
      })(),
    };
  };
}
