import { ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { userIdKey } from "./auth-interceptor.js";
import { codeHttpStatus, codeName } from "./connect-code.js";

/**
 * Where a call's outcome goes: its Connect code and its user, for the request
 * log and metrics: server.ts writes it to the Fastify request.
 */
export interface CallOutcome {
  settle(code: string, userId: string): void;
}

/** The call's outcome sink (set by server.ts for each call). */
export const callOutcomeKey = createContextKey<CallOutcome | undefined>(undefined, {
  description: "where the call's outcome is reported",
});

/**
 * Tells the request log and metrics how a call ended: its Connect code and
 * its user. Put it first (outermost) so it sees errors of every interceptor
 * after it, authentication included. Streams report when they end.
 * Failures that would be 5xx over HTTP go to `onFailure` (ops/failure-log.ts:
 * ours with their stack, shed load briefly and rate-limited).
 */
export function outcomeInterceptor(
  onFailure?: (err: unknown, status: number) => void,
): Interceptor {
  return (next) => async (req) => {
    const sink = req.contextValues.get(callOutcomeKey);
    const settle = (code: string, err?: unknown) => {
      sink?.settle(code, req.contextValues.get(userIdKey));
      if (err === undefined || onFailure === undefined) return;
      const status = codeHttpStatus(ConnectError.from(err).code);
      if (status >= 500) onFailure(err, status);
    };
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (err) {
      settle(codeName(ConnectError.from(err).code), err);
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
          settle(codeName(ConnectError.from(err).code), err);
          throw err;
        }
      })(),
    };
  };
}
