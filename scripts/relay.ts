/**
 * `npm run relay`: the outbox relay alone, for deployments that run it apart
 * from the service (then OUTBOX_RELAY=off there). Reads the service's
 * DATABASE_URL and NATS_URL; serves /metrics on RELAY_METRICS_PORT if set.
 * Any number may run at once: they claim disjoint rows.
 */
import { createServer } from "node:http";
import { pino } from "pino";
import { loadConfig } from "../src/config.js";
import { openDatabase } from "../src/db/connect.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { OutboxRelay } from "../src/events/relay.js";
import { OutboxMetrics } from "../src/events/relay-metrics.js";
import { Metrics } from "../src/ops/metrics.js";

const config = loadConfig();
const logger = pino({ level: config.logLevel });
const nats = config.events.nats;
if (nats === undefined) {
  console.error("configuration error: set NATS_URL (for example nats://127.0.0.1:4222)");
  process.exit(2);
}
const database = openDatabase({
  url: config.databaseUrl,
  poolSize: 2,
  connectTimeoutMs: config.dbConnectTimeoutMs,
});
await migrateToLatest(database.db);
const metrics = new Metrics(database.pool);
const relay = new OutboxRelay({
  db: database.db,
  target: nats,
  logger,
  metrics: new OutboxMetrics(metrics.registry, database.db),
  batchSize: config.events.batchSize,
  leaseMs: config.events.leaseMs,
});
relay.start();
logger.info({ nats: nats.url, stream: nats.stream }, "outbox relay running");

const port = config.events.relayMetricsPort;
const server =
  port === undefined
    ? undefined
    : createServer((req, res) => {
        if (req.url !== "/metrics") {
          res.writeHead(404).end();
          return;
        }
        metrics.registry.metrics().then(
          (body) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(body),
          () => res.writeHead(500).end(),
        );
      }).listen(port, config.host);

const stop = async () => {
  logger.info("stopping the outbox relay");
  server?.close();
  await relay.stop();
  await database.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
