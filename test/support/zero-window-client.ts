/**
 * Clients that never read their answers, in a process of their own (so
 * the service's memory is measured alone): `tsx test/support/zero-window-client.ts JSON`
 * with `{ baseUrl, path, tokens: string[][], streams, waveEveryMs, waitMs }`
 * opens, every `waveEveryMs`, one HTTP/2 connection per token of the next
 * wave (`tokens[wave]`) with its stream window at 0, and `streams` GETs of
 * `path` on each; then waits up to `waitMs` for every stream to end. Prints
 * one JSON line: statuses, how long the longest stream lived, how many are
 * still open.
 */
import { type ClientHttp2Session, connect } from "node:http2";

const { baseUrl, path, tokens, streams, waveEveryMs, waitMs } = JSON.parse(
  process.argv[2] ?? "{}",
) as {
  baseUrl: string;
  path: string;
  tokens: string[][];
  streams: number;
  waveEveryMs: number;
  waitMs: number;
};
const statuses: Record<string, number> = {};
const lifetimes: number[] = [];
const sessions: ClientHttp2Session[] = [];
const ends: Promise<void>[] = [];
let open = 0;

for (const wave of tokens) {
  for (const token of wave) {
    const session = connect(baseUrl, { settings: { initialWindowSize: 0 } });
    session.on("error", () => {});
    sessions.push(session);
    for (let i = 0; i < streams; i++) {
      const t0 = performance.now();
      const stream = session.request({ ":path": path, authorization: `Bearer ${token}` });
      stream.on("error", () => {});
      open++;
      ends.push(
        new Promise<void>((resolve) => {
          stream.once("response", (h) => {
            const s = String(h[":status"]);
            statuses[s] = (statuses[s] ?? 0) + 1;
          });
          stream.once("close", () => {
            open--;
            lifetimes.push(performance.now() - t0);
            resolve();
          });
        }),
      );
    }
  }
  await new Promise((resolve) => setTimeout(resolve, waveEveryMs));
}
await Promise.race([Promise.all(ends), new Promise((resolve) => setTimeout(resolve, waitMs))]);
const stillOpen = open;
for (const s of sessions) s.destroy();
console.log(
  JSON.stringify({ statuses, longestStreamMs: Math.round(Math.max(...lifetimes)), stillOpen }),
);
process.exit(0);
