import { connect, type Socket } from "node:net";

/**
 * Sends `head` (and optionally part of a body) on a raw TCP connection to
 * 127.0.0.1:`port` and resolves with what the server said before it closed
 * the connection or `timeoutMs` passed, and how long that took.
 */
export function rawExchange(
  port: number,
  payload: string | Buffer,
  options: { timeoutMs?: number; untilIncludes?: string } = {},
): Promise<{ response: string; ms: number; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({
        response: Buffer.concat(chunks).toString("latin1"),
        ms: performance.now() - t0,
        closedByServer,
      });
    };
    const timer = setTimeout(() => finish(false), options.timeoutMs ?? 5000);
    socket.on("data", (c) => {
      chunks.push(c);
      if (
        options.untilIncludes &&
        Buffer.concat(chunks).toString("latin1").includes(options.untilIncludes)
      ) {
        finish(false);
      }
    });
    socket.on("end", () => finish(true));
    socket.on("close", () => finish(true));
    socket.on("error", (err) =>
      settled ? undefined : chunks.length > 0 ? finish(true) : reject(err),
    );
    socket.write(payload);
  });
}

/** Opens `count` TCP connections that never send a byte. */
export async function openIdleConnections(port: number, count: number): Promise<Socket[]> {
  const sockets: Socket[] = [];
  const batch = 100;
  for (let i = 0; i < count; i += batch) {
    sockets.push(
      ...(await Promise.all(
        Array.from(
          { length: Math.min(batch, count - i) },
          () =>
            new Promise<Socket>((resolve, reject) => {
              const s = connect(port, "127.0.0.1", () => resolve(s));
              s.on("error", reject);
            }),
        ),
      )),
    );
  }
  for (const s of sockets) s.on("error", () => {});
  return sockets;
}
