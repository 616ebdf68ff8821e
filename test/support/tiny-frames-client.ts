/**
 * One client sending its gRPC messages in 1-byte DATA frames, in a process
 * of its own: `tsx test/support/tiny-frames-client.ts PORT TOKEN STREAMS MS`
 * keeps STREAMS calls of ListSessions open on one connection, each a 60 KB
 * message sent a byte a frame, for MS ms; a stream or connection the server
 * ends is opened again at once. Prints one JSON line: frames sent, streams
 * and connections opened, resets and GOAWAYs received, and its own CPU time
 * (at the end, or on SIGTERM).
 */
import { connect, type Socket } from "node:net";
import { CLIENT_PREFACE, h2Frame, headerBlock } from "./h2-raw.js";

const [port = "0", token = "", streams = "10", ms = "5000"] = process.argv.slice(2);
const until = performance.now() + Number(ms);
const MESSAGE = Buffer.alloc(5 + 60_000, 0x20);
MESSAGE[0] = 0;
MESSAGE.writeUInt32BE(60_000, 1);
const head = headerBlock([
  [":method", "POST"],
  [":scheme", "http"],
  [":path", "/practice.v1.PracticeSessionService/ListSessions"],
  [":authority", "127.0.0.1"],
  ["content-type", "application/grpc"],
  ["te", "trailers"],
  ["authorization", `Bearer ${token}`],
]);
const totals = { frames: 0, streams: 0, connections: 0, resets: 0, goaways: 0 };

/** One connection: STREAMS calls at a time, each fed a byte a frame, until the server ends it. */
async function connection(): Promise<void> {
  totals.connections++;
  const socket: Socket = connect(Number(port), "127.0.0.1");
  socket.on("error", () => {});
  let closed = false;
  socket.once("close", () => {
    closed = true;
  });
  const ended = new Set<number>();
  let pending = Buffer.alloc(0);
  socket.on("data", (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      const type = pending[3];
      const id = pending.readUInt32BE(5) & 0x7fffffff;
      if (type === 3) {
        totals.resets++;
        ended.add(id);
      }
      if (type === 7) totals.goaways++;
      if (type === 1 && (pending[4] ?? 0) & 1) ended.add(id);
      pending = pending.subarray(9 + length);
    }
  });
  socket.write(CLIENT_PREFACE);
  await new Promise((resolve) => {
    socket.once("connect", resolve);
    socket.once("close", resolve);
  });
  let next = 1;
  const live = new Map<number, number>();
  while (!closed && performance.now() < until) {
    while (live.size < Number(streams)) {
      const id = next;
      next += 2;
      live.set(id, 0);
      totals.streams++;
      socket.write(h2Frame(1, 0x4, id, head));
    }
    // One byte on each live stream, 20 rounds a write.
    const frames: Buffer[] = [];
    for (let round = 0; round < 20; round++) {
      for (const [id, sent] of live) {
        if (ended.has(id)) {
          live.delete(id);
          continue;
        }
        const last = sent === MESSAGE.length - 1;
        frames.push(h2Frame(0, last ? 1 : 0, id, MESSAGE.subarray(sent, sent + 1)));
        totals.frames++;
        if (last) live.delete(id);
        else live.set(id, sent + 1);
      }
    }
    if (!socket.write(Buffer.concat(frames))) {
      await new Promise((resolve) => {
        socket.once("drain", resolve);
        socket.once("close", resolve);
      });
    }
    // A write a millisecond at most: a client on the other end of a network, not a busy loop
    // on the service's own two cores.
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  socket.destroy();
}

function report(): never {
  const cpu = process.cpuUsage();
  console.log(JSON.stringify({ ...totals, cpuMs: Math.round((cpu.user + cpu.system) / 1000) }));
  process.exit(0);
}

// SIGTERM: report what was sent so far (a test that ends the attack itself).
process.once("SIGTERM", report);
while (performance.now() < until) await connection();
report();
