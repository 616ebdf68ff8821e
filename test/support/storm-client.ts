import { connect } from "node:net";

/**
 * A storm of short-lived connections, in a process of its own
 * (test/support/client-process.ts): `workers` loops, each opening a
 * connection, sending one of `requests` (whole HTTP/1.1 requests, taken in
 * turn) and closing it `closeAfterMs` later, whatever came back, until
 * `durationMs` has passed. Prints how many connections it made.
 */
const { port, requests, workers, durationMs, closeAfterMs } = JSON.parse(
  process.argv[2] ?? "{}",
) as {
  port: number;
  requests: string[];
  workers: number;
  durationMs: number;
  closeAfterMs: [number, number];
};

let connections = 0;
let next = 0;
const until = performance.now() + durationMs;

function once(request: string): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => {});
    socket.resume();
    socket.once("connect", () => {
      socket.write(request);
      const [min, max] = closeAfterMs;
      setTimeout(() => socket.destroy(), min + Math.random() * (max - min));
    });
    socket.once("close", () => resolve());
  });
}

await Promise.all(
  Array.from({ length: workers }, async () => {
    while (performance.now() < until) {
      const request = requests[next++ % requests.length] as string;
      await once(request);
      connections++;
    }
  }),
);
console.log(JSON.stringify({ connections }));
