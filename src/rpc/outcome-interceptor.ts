import { ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import type { FastifyRequest } from "fastify";
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
 */
export function outcomeInterceptor(): Interceptor {
  return (next) => async (req) => {
    const request = req.contextValues.get(fastifyRequestKey);
    const settle = (code: string) => {
      if (request === undefined) return;
      recordOutcome(request, { code, userId: req.contextValues.get(userIdKey) });
    };
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (err) {
      settle(codeToString(ConnectError.from(err).code));
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
          settle(codeToString(ConnectError.from(err).code));
          throw err;
        }
      })(),
    };
  };
}
