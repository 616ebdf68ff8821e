import { type ContextValues, createContextKey, type Interceptor } from "@connectrpc/connect";
import type { Call } from "../edge/call.js";
import { userIdKey } from "./auth-interceptor.js";

/**
 * The call of the request (edge/api-calls.ts), set by server.ts: its one
 * deadline and its signal, which handlers hand to the use cases.
 */
export const callKey = createContextKey<Call | undefined>(undefined, {
  description: "the API call of the request",
});

/**
 * Runs a unary call in its admission slot and within its deadline: the
 * slot is taken once the token is verified and the request read (put it
 * last), waits until the deadline or until the client leaves, and is held
 * until the handler's work has stopped; the call is answered at its
 * deadline (`deadline_exceeded`) even if that work is still stopping.
 * Streams are not admitted here.
 */
export function callInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (req.stream) return next(req);
    const call = req.contextValues.get(callKey);
    if (call === undefined)
      throw new Error("an API call the edge did not make (edge/api-calls.ts)");
    const user = req.contextValues.get(userIdKey);
    return call.admit({ kind: req.method.name, key: user === "" ? "" : `user:${user}` }, () =>
      next(req),
    );
  };
}

/** The signal of a handler's call: what it hands to the use case. */
export function callSignal(values: ContextValues): AbortSignal {
  return values.get(callKey)?.signal ?? NEVER;
}

const NEVER = new AbortController().signal;
