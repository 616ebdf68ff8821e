import { createContextKey, type Interceptor } from "@connectrpc/connect";
import type { Authenticator } from "../auth/authenticator.js";

/** The authenticated user's id, set by `authInterceptor` before any handler runs. */
export const userIdKey = createContextKey<string>("", { description: "authenticated user id" });

/**
 * Authenticates every call from its `authorization` header (gRPC metadata is
 * headers too), or ends it with `unauthenticated` before the handler runs.
 * A call the edge has authenticated already (edge/api-calls.ts) comes with
 * its user set.
 */
export function authInterceptor(authenticator: Authenticator): Interceptor {
  return (next) => async (req) => {
    if (req.contextValues.get(userIdKey) === "") {
      const userId = await authenticator.authenticate(req.header.get("authorization"));
      req.contextValues.set(userIdKey, userId);
    }
    return next(req);
  };
}
