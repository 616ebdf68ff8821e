/**
 * `npm run relay`: the outbox relay alone, for deployments that run it apart
 * from the service (then OUTBOX_RELAY=off there). Reads the service's
 * DATABASE_URL and NATS_URL; serves /metrics on RELAY_METRICS_PORT if set.
 * Any number may run at once: they claim disjoint rows. Started by
 * scripts/relay.ts, after tracing.
 */
import { createServer, type Server } from "node:http";
import { pino } from "pino";
import { type Config, DEFAULT_DATABASE_URL, loadConfig } from "../src/config.js";
import { createDatabaseIfMissing, openDatabase } from "../src/db/connect.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { databaseLimits } from "../src/edge/call-limits.js";
import { OutboxRelay } from "../src/events/relay.js";
import { OutboxMetrics } from "../src/events/relay-metrics.js";
import { Metrics } from "../src/ops/metrics.js";
import { listenFailure, runEntry, StartupError } from "../src/ops/startup-errors.js";
import { reportTraceExportFailures, stopTracing } from "../src/ops/tracing.js";

let config: Config | undefined;

runEntry(
  async () => {
    const loaded = loadConfig();
    config = loaded;
    const logger = pino({ level: loaded.logLevel });
    reportTraceExportFailures(logger);
    const nats = loaded.events.nats;
    if (nats === undefined) {
      throw new StartupError(
        "configuration error: set NATS_URL (for example nats://127.0.0.1:4222)",
      );
    }
    await createDatabaseIfMissing(loaded.databaseUrl, loaded.dbConnectTimeoutMs, {
      createFolder: loaded.databaseUrl === DEFAULT_DATABASE_URL,
    });
    const database = openDatabase({
      url: loaded.databaseUrl,
      poolSize: 2,
      connectTimeoutMs: loaded.dbConnectTimeoutMs,
      limits: databaseLimits(config),
    });
    try {
      await migrateToLatest(database.db);
    } catch (err) {
      await database.close();
      throw err;
    }
    const metrics = new Metrics(database.pool);
    const port = loaded.events.relayMetricsPort;
    let server: Server | undefined;
    if (port !== undefined) {
      server = createServer((req, res) => {
        if (req.url !== "/metrics") {
          res.writeHead(404).end();
          return;
        }
        metrics.registry.metrics().then(
          (body) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(body),
          () => res.writeHead(500).end(),
        );
      });
      const listening = server;
      await new Promise<void>((resolve, reject) => {
        listening.once("error", reject);
        listening.listen(port, loaded.host, () => resolve());
      }).catch(async (err: unknown) => {
        await database.close();
        const line = listenFailure(err, loaded.host, port, "RELAY_METRICS_PORT");
        throw line === undefined ? err : new StartupError(line);
      });
    }
    const relay = new OutboxRelay({
      db: database.db,
      target: nats,
      logger,
      metrics: new OutboxMetrics(metrics.registry, database.opsDb),
      batchSize: loaded.events.batchSize,
      leaseMs: loaded.events.leaseMs,
    });
    relay.start();
    logger.info({ nats: nats.url, stream: nats.stream }, "outbox relay running");

    const stop = async () => {
      const stopBy = performance.now() + loaded.shutdownTimeoutMs;
      logger.info("stopping the outbox relay");
      server?.close();
      await relay.stop();
      await database.close();
      await stopTracing(stopBy - performance.now());
      process.exit(0);
    };
    process.on("SIGTERM", () => void stop());
    process.on("SIGINT", () => void stop());
  },
  { databaseUrl: () => config?.databaseUrl, debug: () => config?.logLevel === "debug" },
);
