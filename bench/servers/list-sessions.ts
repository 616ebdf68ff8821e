/**
 * ListSessions as both hand-written gRPC baselines serve it: the service's own
 * authenticator, use case and protobuf code on the bench database, so only the
 * transport around it differs from the service's.
 */
import { create } from "@bufbuild/protobuf";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import {
  type ListSessionsRequest,
  type ListSessionsResponse,
  ListSessionsResponseSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { PracticeSessions } from "../../src/app/practice-sessions.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { loadConfig } from "../../src/config.js";
import { openDatabase } from "../../src/db/connect.js";
import { systemClock } from "../../src/domain/clock.js";
import { databaseLimits } from "../../src/edge/call-limits.js";
import { userIdKey } from "../../src/rpc/auth-interceptor.js";
import { practiceSessionService } from "../../src/rpc/practice-session-service.js";

export const database = openDatabase({
  url: process.env.DATABASE_URL ?? "",
  poolSize: Number(process.env.DB_POOL_SIZE ?? 10),
  connectTimeoutMs: 2000,
  limits: databaseLimits(loadConfig({})),
});
/** The service's own ServiceImpl, given the one context value it reads: the user. */
const impl = practiceSessionService(new PracticeSessions(database.db, systemClock));
const authenticator = createAuthenticator({ secret: process.env.JWT_SECRET ?? "" }, systemClock);

/** One call: its `authorization` header value and request; throws a ConnectError. */
export async function listSessions(
  authorization: unknown,
  request: ListSessionsRequest,
): Promise<ListSessionsResponse> {
  const userId = await authenticator.authenticate(
    typeof authorization === "string" ? authorization : undefined,
  );
  const context = { values: createContextValues().set(userIdKey, userId) } as HandlerContext;
  return create(ListSessionsResponseSchema, await impl.listSessions(request, context));
}
