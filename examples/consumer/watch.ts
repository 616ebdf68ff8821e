import { DeliverPolicy, JetStreamApiCodes, JetStreamApiError, jetstream } from "@nats-io/jetstream";
import { ConnectionError, connect } from "@nats-io/transport-node";

/**
 * `npm run example:events`: prints every event the service publishes, of
 * every type, one line each (its type, then its `data`), as it is published:
 * an ordered consumer, which the stream forgets once it stops (nothing to
 * clean up). EVENTS_FROM=start prints the stream from its first event.
 * NATS_URL, NATS_STREAM and NATS_SUBJECT_PREFIX as for the service. Ctrl-C stops it.
 */
const url = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const stream = process.env.NATS_STREAM ?? "PRACTICE";
const subjects = `${process.env.NATS_SUBJECT_PREFIX ?? "practice"}.>`;
const fromStart = process.env.EVENTS_FROM === "start";

function fail(line: string): never {
  console.error(line);
  process.exit(1);
}

const nc = await connect({ servers: url }).catch((err: unknown) => {
  if (!(err instanceof ConnectionError)) throw err;
  return fail(
    `cannot reach NATS at ${url}: ${err.message} (start NATS with JetStream, or set NATS_URL)`,
  );
});
try {
  const consumer = await jetstream(nc)
    .consumers.get(stream, {
      filter_subjects: subjects,
      deliver_policy: fromStart ? DeliverPolicy.All : DeliverPolicy.New,
    })
    .catch((err: unknown) => {
      if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) {
        fail(`no stream ${stream} yet: the service creates it when it starts with NATS_URL set`);
      }
      throw err;
    });
  const messages = await consumer.consume();
  process.once("SIGINT", () => void messages.close());
  process.once("SIGTERM", () => void messages.close());
  console.log(
    `watching ${subjects} on the stream ${stream}` +
      `${fromStart ? " from its first event" : ", from now on"} (Ctrl-C to stop)`,
  );
  for await (const m of messages) {
    const event = m.json<{ type: string; data: unknown }>();
    console.log(`${event.type} ${JSON.stringify(event.data)}`);
  }
} finally {
  await nc.close();
}
