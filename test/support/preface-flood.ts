/**
 * HTTP/2 connections that send the preface and an empty SETTINGS frame and
 * then nothing, in a process of its own (its own file limit, its own CPU):
 * `tsx test/support/preface-flood.ts PORT COUNT MS` keeps COUNT of them
 * open against 127.0.0.1:PORT for MS ms, opening a new one as each is
 * closed. Prints one JSON line: connections opened and closed by the server.
 * Its connections come from 127.0.0.2–127.0.0.17: the server closes each one
 * first, leaving its address pair in TIME_WAIT for a minute, and tens of
 * thousands of them from one address would use up that address's ports
 * (the test's own calls from 127.0.0.1 then wait seconds to connect).
 */
import { connect } from "node:net";

const [port = "0", count = "10050", ms = "20000"] = process.argv.slice(2);
const PREFACE = Buffer.concat([
  Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
  // SETTINGS, empty: length 0, type 4, flags 0, stream 0.
  Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]),
]);
const until = performance.now() + Number(ms);
let opened = 0;
let closed = 0;
let open = 0;

function one(): void {
  if (performance.now() >= until) return;
  opened++;
  open++;
  const socket = connect({
    port: Number(port),
    host: "127.0.0.1",
    localAddress: `127.0.0.${2 + (opened % 16)}`,
  });
  socket.on("error", () => {});
  socket.once("connect", () => socket.write(PREFACE));
  // What the server says (its SETTINGS, a GOAWAY) is read and dropped.
  socket.on("data", () => {});
  socket.once("close", () => {
    open--;
    closed++;
    // Reconnect as soon as the server lets go: the flood never lets up.
    setImmediate(one);
  });
  sockets.add(socket);
  socket.once("close", () => sockets.delete(socket));
}

const sockets = new Set<ReturnType<typeof connect>>();
// Opened 200 at a time, so the listen backlog keeps up.
for (let i = 0; i < Number(count); i += 200) {
  for (let j = i; j < Math.min(i + 200, Number(count)); j++) one();
  await new Promise((resolve) => setTimeout(resolve, 10));
}
await new Promise((resolve) => setTimeout(resolve, Math.max(0, until - performance.now())));
const stillOpen = open;
for (const socket of sockets) socket.destroy();
console.log(JSON.stringify({ opened, closedByServer: closed, stillOpen }));
process.exit(0);
