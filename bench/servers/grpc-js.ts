/**
 * The gRPC baseline: a @grpc/grpc-js Server running the service's own
 * implementation, authenticator and protobuf code on the same database
 * (list-sessions.ts), so only the transport differs (grpc-js instead of
 * Connect on Node's HTTP/2).
 *
 *   PORT=8092 DATABASE_URL=mysql://... JWT_SECRET=... node dist/bench/servers/grpc-js.js (after npm run bench:build)
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import {
  type ListSessionsRequest,
  ListSessionsRequestSchema,
  type ListSessionsResponse,
  ListSessionsResponseSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { database, listSessions } from "./list-sessions.js";

/** Connect's codes are gRPC's numbers; anything else is INTERNAL. */
function fail(callback: grpc.sendUnaryData<never>, err: unknown): void {
  const e = err instanceof ConnectError ? err : undefined;
  callback({
    code: e ? (e.code as number) : grpc.status.INTERNAL,
    details: e ? e.rawMessage : "internal error",
  });
}

const definition = {
  listSessions: {
    path: "/practice.v1.PracticeSessionService/ListSessions",
    requestStream: false,
    responseStream: false,
    requestDeserialize: (b: Buffer) => fromBinary(ListSessionsRequestSchema, b),
    responseSerialize: (m: ListSessionsResponse) =>
      Buffer.from(toBinary(ListSessionsResponseSchema, m)),
    requestSerialize: () => Buffer.alloc(0),
    responseDeserialize: () => ({}) as ListSessionsResponse,
  } satisfies grpc.MethodDefinition<ListSessionsRequest, ListSessionsResponse>,
};

const server = new grpc.Server();
server.addService(definition, {
  listSessions: (
    call: grpc.ServerUnaryCall<ListSessionsRequest, ListSessionsResponse>,
    callback: grpc.sendUnaryData<ListSessionsResponse>,
  ) => {
    listSessions(call.metadata.get("authorization")[0], call.request).then(
      (res) => callback(null, res),
      (err: unknown) => fail(callback, err),
    );
  },
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
