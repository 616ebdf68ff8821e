/**
 * The gRPC baseline: a @grpc/grpc-js Server running the service's own
 * implementation, authenticator and protobuf code on the same database, so only
 * the transport differs (grpc-js instead of Connect on Node's HTTP/2).
 *
 *   PORT=8092 DATABASE_URL=mysql://... JWT_SECRET=... node dist/bench/servers/grpc-js.js (after npm run bench:build)
 */
import {
  create,
  fromBinary,
  type Message,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import type { GenMessage } from "@bufbuild/protobuf/codegenv2";
import { ConnectError, createContextValues, type HandlerContext } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import {
  type ListSessionsRequest,
  ListSessionsRequestSchema,
  type ListSessionsResponse,
  ListSessionsResponseSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { PracticeSessions } from "../../src/app/practice-sessions.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { openDatabase } from "../../src/db/connect.js";
import { systemClock } from "../../src/domain/clock.js";
import { userIdKey } from "../../src/rpc/auth-interceptor.js";
import { practiceSessionService } from "../../src/rpc/practice-session-service.js";

const database = openDatabase({
  url: process.env.DATABASE_URL ?? "",
  poolSize: Number(process.env.DB_POOL_SIZE ?? 10),
  connectTimeoutMs: 2000,
});
const sessions = new PracticeSessions(database.db, systemClock);
const authenticator = createAuthenticator({ secret: process.env.JWT_SECRET ?? "" }, systemClock);

/** Connect's codes are gRPC's numbers; anything else is INTERNAL. */
function fail(callback: grpc.sendUnaryData<never>, err: unknown): void {
  const e = err instanceof ConnectError ? err : undefined;
  callback({
    code: e ? (e.code as number) : grpc.status.INTERNAL,
    details: e ? e.rawMessage : "internal error",
  });
}

async function user(call: grpc.ServerUnaryCall<unknown, unknown>): Promise<string> {
  const value = call.metadata.get("authorization")[0];
  return authenticator.authenticate(typeof value === "string" ? value : undefined);
}

function method<I, O>(
  path: string,
  decode: (b: Buffer) => I,
  encode: (m: O) => Buffer,
): grpc.MethodDefinition<I, O> {
  return {
    path,
    requestStream: false,
    responseStream: false,
    requestDeserialize: decode,
    responseSerialize: encode,
    requestSerialize: () => Buffer.alloc(0),
    responseDeserialize: () => ({}) as O,
  };
}

const definition = {
  listSessions: method<ListSessionsRequest, ListSessionsResponse>(
    "/practice.v1.PracticeSessionService/ListSessions",
    (b) => fromBinary(ListSessionsRequestSchema, b),
    (m) => Buffer.from(toBinary(ListSessionsResponseSchema, m)),
  ),
};

/** The service's own ServiceImpl, given the one context value it reads: the user. */
const impl = practiceSessionService(sessions);
const contextFor = (userId: string) =>
  ({ values: createContextValues().set(userIdKey, userId) }) as HandlerContext;

function unary<I, O extends Message>(
  schema: GenMessage<O>,
  run: (
    req: I,
    ctx: HandlerContext,
  ) => Promise<MessageInitShape<GenMessage<O>>> | MessageInitShape<GenMessage<O>>,
) {
  return (call: grpc.ServerUnaryCall<I, O>, callback: grpc.sendUnaryData<O>) => {
    user(call)
      .then(async (userId) => run(call.request, contextFor(userId)))
      .then((res) => callback(null, create(schema, res)))
      .catch((err: unknown) => fail(callback, err));
  };
}

const server = new grpc.Server();
server.addService(definition, {
  listSessions: unary<ListSessionsRequest, ListSessionsResponse>(
    ListSessionsResponseSchema,
    (req, ctx) => impl.listSessions(req, ctx),
  ),
});

server.bindAsync(
  `127.0.0.1:${process.env.PORT ?? 8092}`,
  grpc.ServerCredentials.createInsecure(),
  (err) => {
    if (err) throw err;
  },
);
process.on("SIGTERM", () => {
  server.tryShutdown(() => void database.close().then(() => process.exit(0)));
});
