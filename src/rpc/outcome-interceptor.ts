import { ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { codeHttpStatus, codeName } from "../app/connect-codes.js";
import { userIdKey } from "./auth-interceptor.js";

/** Where a call's outcome (Connect code and user) goes, for the request log and metrics. */
export interface CallOutcome {
  settle(code: string, userId: string): void;
}

/** The call's outcome sink (set by server.ts for each call). */
export const callOutcomeKey = createContextKey<CallOutcome | undefined>(undefined, {
  description: "where the call's outcome is reported",
});

/**
 * Reports how a call ended to the request log and metrics; outermost, so it sees
 * every interceptor's errors. Failures that would be 5xx go to `onFailure`.
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
