/**
 * The ceiling for any gRPC server on Node's HTTP/2: the grpc-js baseline's
 * work (the service's own implementation, authenticator and protobuf code on
 * the same database) answered straight from node:http2's `stream` event, with
 * nothing else: no framework, no log, no metrics, no admission, no deadline.
 *
 *   PORT=8093 DATABASE_URL=mysql://... JWT_SECRET=... node dist/bench/servers/raw-h2.js (after npm run bench:build)
 */
import { createServer } from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { ConnectError, createContextValues, type HandlerContext } from "@connectrpc/connect";
import {
  ListSessionsRequestSchema,
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
const sessions = practiceSessionService(new PracticeSessions(database.db, systemClock));
const authenticator = createAuthenticator({ secret: process.env.JWT_SECRET ?? "" }, systemClock);
const LIST = "/practice.v1.PracticeSessionService/ListSessions";

async function listSessions(body: Buffer, authorization: string | undefined) {
  const userId = await authenticator.authenticate(authorization);
  const context = { values: createContextValues().set(userIdKey, userId) } as HandlerContext;
  const input = fromBinary(ListSessionsRequestSchema, body.subarray(5));
  const output = await sessions.listSessions(input, context);
  const message = toBinary(ListSessionsResponseSchema, create(ListSessionsResponseSchema, output));
  const framed = Buffer.allocUnsafe(message.length + 5);
  framed[0] = 0;
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

const server = createServer();
server.on("stream", (stream, headers) => {
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  stream.on("end", () => {
    const authorization = headers.authorization;
    const answer =
      headers[":path"] === LIST
        ? listSessions(
            Buffer.concat(chunks),
            typeof authorization === "string" ? authorization : "",
          )
        : Promise.reject(new ConnectError("not here", 12));
    answer.then(
      (framed) => {
        stream.respond(
          { ":status": 200, "content-type": "application/grpc+proto" },
          {
            waitForTrailers: true,
          },
        );
        stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
        stream.end(framed);
      },
      (err: unknown) => {
        const code = err instanceof ConnectError ? err.code : 13;
        stream.respond(
          { ":status": 200, "content-type": "application/grpc+proto", "grpc-status": String(code) },
          { endStream: true },
        );
      },
    );
  });
});
server.listen(Number(process.env.PORT ?? 8093), "127.0.0.1");
process.on("SIGTERM", () => {
  server.close();
  void database.close().then(() => process.exit(0));
});
