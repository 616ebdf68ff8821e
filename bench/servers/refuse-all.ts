/**
 * Baseline for refusing: a bare Node HTTP/2 server (h2c) that answers every
 * stream at once with the service's Connect refusal (503 and its JSON body),
 * reading nothing and logging nothing: what a refused call costs Node's
 * HTTP/2 alone, the least a refusal in this service can cost.
 *
 *   PORT=8091 tsx bench/servers/refuse-all.ts
 */
import { createServer } from "node:http2";

const body = Buffer.from('{"code":"unavailable","message":"server overloaded, try again"}');
const head = {
  ":status": 503,
  "content-type": "application/json",
  "content-length": body.byteLength,
};
const server = createServer({ settings: { maxConcurrentStreams: 100 } });
server.on("stream", (stream) => {
  stream.on("error", () => {});
  stream.resume();
  stream.respond(head);
  stream.end(body);
});
server.listen(Number(process.env.PORT), "127.0.0.1");
process.on("SIGTERM", () => server.close(() => process.exit(0)));
