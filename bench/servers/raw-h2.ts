// SCRATCH (not committed): the ceiling of serving gRPC from the raw stream event.
import { createServer } from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import { ListSessionsRequestSchema, ListSessionsResponseSchema } from "../../gen/practice/v1/practice_session_service_pb.js";
import { PracticeSessions } from "../../src/app/practice-sessions.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { openDatabase } from "../../src/db/connect.js";
import { systemClock } from "../../src/domain/clock.js";
import { userIdKey } from "../../src/rpc/auth-interceptor.js";
import { practiceSessionService } from "../../src/rpc/practice-session-service.js";

const database = openDatabase({ url: process.env.DATABASE_URL ?? "", poolSize: Number(process.env.DB_POOL_SIZE ?? 10), connectTimeoutMs: 2000 });
const sessions = new PracticeSessions(database.db, systemClock);
const authenticator = createAuthenticator({ secret: process.env.JWT_SECRET ?? "" }, systemClock);
const impl = practiceSessionService(sessions);
const server = createServer();
server.on("stream", (stream, headers) => {
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  stream.on("end", async () => {
    try {
      const body = Buffer.concat(chunks);
      const input = fromBinary(ListSessionsRequestSchema, body.subarray(5));
      const user = await authenticator.authenticate(headers.authorization as string);
      const out = await impl.listSessions(input, { values: createContextValues().set(userIdKey, user) } as HandlerContext);
      const bin = toBinary(ListSessionsResponseSchema, create(ListSessionsResponseSchema, out as never));
      const buf = Buffer.allocUnsafe(bin.length + 5);
      buf[0] = 0; buf.writeUInt32BE(bin.length, 1); buf.set(bin, 5);
      stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
      stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(buf);
    } catch (e) {
      stream.respond({ ":status": 200, "content-type": "application/grpc+proto", "grpc-status": "13" }, { endStream: true });
    }
  });
});
server.listen(Number(process.env.PORT), "127.0.0.1");
process.on("SIGTERM", () => { server.close(); void database.close().then(() => process.exit(0)); });
