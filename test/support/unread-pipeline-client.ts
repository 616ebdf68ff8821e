/**
 * HTTP/1.1 clients that pipeline requests and never read the answers, in a
 * process of their own (test/support/client-process.ts): `{ port, path,
 * tokens, pipelined, holdMs }` opens one connection per token, sends
 * `pipelined` GETs of `path` on each at once and reads nothing for
 * `holdMs`; then reads, to learn which connections the service has ended
 * (reset, or closed before every answer came). Prints one JSON line.
 */
import { connect, type Socket } from "node:net";

const { port, path, tokens, pipelined, holdMs } = JSON.parse(process.argv[2] ?? "{}") as {
  port: number;
  path: string;
  tokens: string[];
  pipelined: number;
  holdMs: number;
};

const sockets: Socket[] = await Promise.all(
  tokens.map(
    (token) =>
      new Promise<Socket>((resolve) => {
        const socket = connect(port, "127.0.0.1", () => {
          socket.pause();
          const get = `GET ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\n\r\n`;
          socket.write(get.repeat(pipelined));
          resolve(socket);
        });
        socket.on("error", () => {});
      }),
  ),
);
await new Promise((resolve) => setTimeout(resolve, holdMs));
// A connection the service ended errors or closes once read; one it keeps open stays so.
const ended = await Promise.all(
  sockets.map(
    (socket) =>
      new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 3000);
        const done = () => {
          clearTimeout(timer);
          resolve(true);
        };
        socket.on("data", () => {});
        socket.once("error", done);
        socket.once("close", done);
        socket.resume();
      }),
  ),
);
for (const socket of sockets) socket.destroy();
console.log(
  JSON.stringify({ connections: sockets.length, endedByService: ended.filter(Boolean).length }),
);
process.exit(0);
