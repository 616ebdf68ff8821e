import { ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { retryAfterHeaders } from "../app/codes.js";
import { meaningOfError } from "../app/errors.js";
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
 * every interceptor's errors. Failures of the server's own go to `onFailure`.
 * An error the table of codes says to retry later carries `Retry-After`, in
 * Connect's headers and gRPC's trailers alike, as REST's problem does.
 */
export function outcomeInterceptor(
  onFailure?: (err: unknown, status: number) => void,
): Interceptor {
  return (next) => async (req) => {
    const sink = req.contextValues.get(callOutcomeKey);
    const settle = (code: string, err?: unknown) => {
      sink?.settle(code, req.contextValues.get(userIdKey));
      if (err === undefined || onFailure === undefined) return;
      const meaning = meaningOfError(ConnectError.from(err));
      if (meaning.serverFault) onFailure(err, meaning.httpStatus);
    };
    let res: Awaited<ReturnType<typeof next>>;
    try {
      res = await next(req);
    } catch (err) {
      const error = ConnectError.from(err);
      const meaning = meaningOfError(error);
      for (const [name, value] of Object.entries(retryAfterHeaders(meaning)))
        error.metadata.set(name, value);
      settle(meaning.name, error);
      throw error;
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
          settle(meaningOfError(ConnectError.from(err)).name, err);
          throw err;
        }
      })(),
    };
  };
}
