import { ConnectionError } from "@nats-io/transport-node";
import { runAverageScore } from "./average-score.js";
import { startTracing } from "./tracing.js";

/**
 * `npm run example:consumer`: prints each user's running average score, per
 * mode of round (full, review, missed), as sessions complete. NATS_URL, NATS_STREAM and NATS_SUBJECT_PREFIX as for the
 * service; CONSUMER_NAME (default average-score) and CONSUMER_STATE (default
 * ./data/average-score.json); the OTEL_* variables for traces (tracing.ts). Stop it with Ctrl-C; start it again: it goes on
 * where it stopped, counting nothing twice.
 */
const stopTracing = await startTracing();
const stop = new AbortController();
process.once("SIGINT", () => stop.abort());
process.once("SIGTERM", () => stop.abort());

const url = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
console.log(`connecting to NATS at ${url}...`);
const state = await runAverageScore(
  {
    url,
    stream: process.env.NATS_STREAM ?? "PRACTICE",
    subjectPrefix: process.env.NATS_SUBJECT_PREFIX ?? "practice",
    durable: process.env.CONSUMER_NAME ?? "average-score",
    stateFile: process.env.CONSUMER_STATE ?? "./data/average-score.json",
    onAverage: (user, mode, average, sessions) =>
      console.log(`${user}: average ${average.toFixed(1)}% over ${sessions} ${mode} session(s)`),
    onWaitingForStream: (stream) =>
      console.log(
        `waiting for the stream ${stream}: the service creates it when it starts with NATS_URL set`,
      ),
    onConnected: (subject, waiting) =>
      console.log(
        `connected to NATS: consuming ${subject} (${waiting} waiting); each completed session ` +
          "prints its user's average over the rounds of its mode: full, review or missed (Ctrl-C to stop)",
      ),
  },
  stop.signal,
).catch((err: unknown) => {
  // The client's own error says only "connection refused", with its stack.
  if (!(err instanceof ConnectionError)) throw err;
  console.error(
    `cannot reach NATS at ${url}: ${err.message} (start NATS with JetStream, or set NATS_URL)`,
  );
  process.exit(1);
});
console.log(`stopped after stream sequence ${state.lastSeq}`);
await stopTracing();
