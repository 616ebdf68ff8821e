/**
 * The ceiling for any gRPC server on Node's HTTP/2: the grpc-js baseline's
 * work (the service's own implementation, authenticator and protobuf code on
 * the same database) answered straight from node:http2's `stream` event, with
 * nothing else: no framework, no log, no metrics, no admission, no deadline.
 *
 *   PORT=8093 DATABASE_URL=mysql://... JWT_SECRET=... node dist/bench/servers/raw-h2.js (after npm run bench:build)
 */
import { createServer } from "node:http2";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import {
  ListSessionsRequestSchema,
  ListSessionsResponseSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { database, listSessions } from "./list-sessions.js";

const LIST = "/practice.v1.PracticeSessionService/ListSessions";

/** The gRPC framing of one call: a 5-byte envelope header around each message. */
async function answer(body: Buffer, authorization: unknown): Promise<Buffer> {
  const input = fromBinary(ListSessionsRequestSchema, body.subarray(5));
  const message = toBinary(ListSessionsResponseSchema, await listSessions(authorization, input));
  const framed = Buffer.allocUnsafe(message.length + 5);
  framed[0] = 0;
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

const server = createServer();
server.on("stream", (stream, headers) => {
  // A client that resets its stream (h2load at the end of a run) is not an error here.
  stream.on("error", () => {});
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  stream.on("end", () => {
    const answered =
      headers[":path"] === LIST
        ? answer(Buffer.concat(chunks), headers.authorization)
        : Promise.reject(new ConnectError("not here", 12));
    answered.then(
      (framed) => {
        if (stream.destroyed) return;
        stream.respond(
          { ":status": 200, "content-type": "application/grpc+proto" },
          { waitForTrailers: true },
        );
        stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
        stream.end(framed);
      },
      (err: unknown) => {
        if (stream.destroyed) return;
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
