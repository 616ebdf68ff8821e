/**
 * The service: waits for the database, migrates, builds the app, listens on
 * one port and stops on a signal. Started by main.ts, after tracing.
 */
import { type Logger, pino } from "pino";
import { createAuthenticator } from "./auth/authenticator.js";
import { devSecret } from "./auth/tokens.js";
import { type Config, loadConfig } from "./config.js";
import { describeStore, openDatabase } from "./db/connect.js";
import type { Db } from "./db/database.js";
import { insertDemoContent, liveQuizIds } from "./db/demo-content.js";
import { migrateToLatest } from "./db/migrate.js";
import { type ReadRouting, ReplicaReads } from "./db/read-routing.js";
import { demoToken, devBanner, TOKEN_HINT } from "./demo-hints.js";
import { systemClock } from "./domain/clock.js";
import { databaseLimits } from "./edge/call-limits.js";
import { metricsListener } from "./edge/metrics-listener.js";
import { servePort } from "./edge/one-port.js";
import { OutboxRelay } from "./events/relay.js";
import { OutboxMetrics } from "./events/relay-metrics.js";
import { Admission } from "./ops/admission.js";
import { HealthMonitor } from "./ops/health.js";
import { MemorySettle } from "./ops/memory-settle.js";
import { Metrics, watchMemory } from "./ops/metrics.js";
import { projectRoot, requirePatches } from "./ops/patches-applied.js";
import {
  checkPortsFree,
  checkTlsFiles,
  flushLogSync,
  listenFailure,
  runEntry,
  StartupError,
} from "./ops/startup-errors.js";
import { type Stop, stopOnSignals } from "./ops/stop-signals.js";
import { reportTraceExportFailures, stopTracing, tracingStarted } from "./ops/tracing.js";
import { SERVICE_VERSION } from "./ops/version.js";
import { waitForDatabase } from "./ops/wait-for-database.js";
import { buildApp } from "./server.js";
import { ensurePracticePage, PAGE_DIST } from "./web/build-page.js";
import { loadPracticePage, PRACTICE_PAGE_PATH } from "./web/practice-page.js";

/** Beyond SHUTDOWN_TIMEOUT_MS (after which connections are cut), time to close the pool. */
const SHUTDOWN_MARGIN_MS = 5_000;

/** Known once loaded: start-up failures name the database and print stacks at debug level. */
let loaded: Config | undefined;
/** The service's logger, flushed before a start-up failure's line so that the line ends the output. */
let startupLogger: Logger | undefined;

async function main() {
  const config = loadConfig();
  loaded = config;
  requirePatches(projectRoot());
  if (config.tls) checkTlsFiles(config.tls);
  const logger = pino({
    level: config.logLevel,
    // Nothing logs headers today; should an error ever carry them, no credential goes out.
    redact: { paths: ["*.headers.authorization", "*.headers.cookie"], censor: "[redacted]" },
  });
  startupLogger = logger;
  reportTraceExportFailures(logger);
  // Before anything waits: a stop during start-up is as clean as one while serving.
  const stop = stopOnSignals({
    logger,
    forceAfterMs: config.shutdownTimeoutMs + SHUTDOWN_MARGIN_MS,
  });

  // A port another process holds stops the start before the database is touched.
  await checkPortsFree(config.host, [
    ["PORT", config.port],
    ["METRICS_PORT", config.metricsPort],
  ]);

  // loadConfig refuses a missing key in production; elsewhere use a dev secret.
  const devMode = !config.jwt.secret && !config.jwt.publicKeyPem && !config.jwt.jwksUrl;
  const jwt = devMode ? { ...config.jwt, secret: devSecret() } : config.jwt;

  const { database, readDatabase, reads } = await openStores(config, logger, stop);
  // The embedded store is for trying the service: give it something to practise.
  // Without migrations at start-up the tables may not exist yet: no demo hints then.
  let quizIds = config.migrateOnStart ? await liveQuizIds(database.db, 2) : [];
  if (config.migrateOnStart && database.store === "sqlite" && quizIds.length === 0) {
    quizIds = (await insertDemoContent(database.db)).quizIds;
    logger.info({ quizIds }, "loaded the demo content");
  }

  let practicePage: Awaited<ReturnType<typeof loadPracticePage>> | undefined;
  if (config.practicePage) {
    try {
      const build = await stop.until(ensurePracticePage());
      practicePage = await loadPracticePage(PAGE_DIST);
      logger.info({ build }, `practice page at ${PRACTICE_PAGE_PATH}`);
    } catch (err) {
      throw new StartupError(
        `cannot build the practice page: ${err instanceof Error ? err.message : String(err)} (or set PRACTICE_PAGE=off)`,
      );
    }
  }

  // Probes on a connection of their own; migrations checked once, here.
  await stop.checkpoint();
  const health = new HealthMonitor(database.db, { probe: database.probe });
  health.start();
  if (!(await health.checkMigrations())) logger.warn("migrations are not all applied: not ready");
  const metrics = new Metrics(database.pool);
  // Scrapes read on a connection of their own, never waiting behind users.
  const outboxMetrics = new OutboxMetrics(metrics.registry, database.opsDb);
  const app = await buildApp({
    admission: new Admission(config.admission),
    db: database.db,
    pool: database.pool,
    metrics,
    reads,
    health,
    corsOrigins: config.corsOrigins,
    trustProxy: config.trustProxy,
    requestTimeoutMs: config.requestTimeoutMs,
    clock: systemClock,
    // A development start says how to get a token in every refusal.
    authenticator: createAuthenticator(jwt, systemClock, devMode ? { hint: TOKEN_HINT } : {}),
    logger,
    practicePage,
    rpcShortPath: config.rpcShortPath,
    tracing: tracingStarted(),
  });
  const port = servePort(app, { tls: config.tls, edge: config.edge });
  await listenNamed(
    "PORT",
    config.host,
    config.port,
    () => port.listen(config.port, config.host),
    () => database.close(),
  );
  const address = port.server.address();
  const actualPort = typeof address === "object" && address ? address.port : config.port;
  // "listening" only once both ports are: a busy METRICS_PORT's line is then the last one.
  const scrape = metricsListener(metrics, health);
  await listenNamed(
    "METRICS_PORT",
    config.host,
    config.metricsPort,
    () =>
      new Promise<void>((resolve, reject) => {
        scrape.once("error", reject);
        scrape.listen(config.metricsPort, config.host, () => resolve());
      }),
    async () => {
      await port.close(0);
      await database.close();
    },
  );
  const scrapeAddress = scrape.address();
  const scrapePort = typeof scrapeAddress === "object" && scrapeAddress ? scrapeAddress.port : 0;
  logger.info(
    { port: actualPort, tls: config.tls !== undefined, version: SERVICE_VERSION },
    "listening",
  );
  logger.info({ port: scrapePort }, "metrics listening (GET /metrics, /healthz, /readyz)");

  const relay = startRelay(config, database.db, logger, outboxMetrics);
  // What a flood took is given back once the service is quiet again.
  const memory = new MemorySettle();
  memory.start();
  watchMemory(metrics, memory);

  if (devMode && jwt.secret !== undefined) {
    const token = await demoToken(jwt.secret);
    console.log(
      devBanner({
        version: SERVICE_VERSION,
        scrapePort,
        databaseUrl: config.databaseUrl,
        port: actualPort,
        tls: config.tls,
        quizIds,
        token,
        practicePage: practicePage !== undefined,
      }),
    );
  }

  // From here a stop drains (ops/stop-signals.ts).
  stop.serve({
    drain: async () => {
      // The whole stop, the last spans' export included, within SHUTDOWN_TIMEOUT_MS.
      const stopBy = performance.now() + config.shutdownTimeoutMs;
      // NOT_SERVING first: health watchers hear it and their streams end, so
      // the drain below waits only for real requests.
      health.startDraining();
      memory.stop();
      // The relay stops while requests finish: what they write waits in the outbox.
      const relayStopped = relay?.stop();
      const cut = await port.close(config.shutdownTimeoutMs);
      // Probes (on this listener) hear NOT_SERVING until the port is closed.
      scrape.close();
      scrape.closeAllConnections();
      await relayStopped;
      await database.close();
      await readDatabase?.close();
      // The last spans (the drain's calls, the relay's last batch) go out
      // before exit, in what is left of SHUTDOWN_TIMEOUT_MS.
      await stopTracing(stopBy - performance.now());
      if (cut > 0) {
        // Calls were cut short: not a clean stop, whatever the signal.
        logger.error(
          { cut, shutdownTimeoutMs: config.shutdownTimeoutMs },
          "stopped: connections cut at SHUTDOWN_TIMEOUT_MS",
        );
        return false;
      }
      logger.info("stopped");
      return true;
    },
  });
}

/**
 * The users' database, created if missing and migrated (MIGRATE_ON_START), and the read replica
 * when DATABASE_READ_URL is set: each closed on a stop.
 */
async function openStores(config: Config, logger: Logger, stop: Stop) {
  const open = (url: string) =>
    openDatabase({
      url,
      poolSize: config.dbPoolSize,
      connectTimeoutMs: config.dbConnectTimeoutMs,
      limits: databaseLimits(config),
    });
  await waitForDatabase(config, logger, stop);
  const database = open(config.databaseUrl);
  stop.closeOnStop(() => database.close());
  if (config.migrateOnStart) {
    // Safe with many replicas starting at once: one applies, the others wait (migrate.ts).
    // A stop ends a wait for another replica's migration, never one under way.
    const lock = { signal: stop.signal };
    const applied = await migrateToLatest(database.db, lock).catch(async (err: unknown) => {
      await stop.checkpoint();
      await database.close();
      throw err;
    });
    logger.info(
      { store: database.store, applied },
      `database migrated (${describeStore(config.databaseUrl)})`,
    );
  } else {
    logger.info("MIGRATE_ON_START=false: not ready until `npm run migrate` has run");
  }
  // A migration is left to finish: half of one is worse than the wait.
  await stop.checkpoint();
  let reads: ReadRouting | undefined;
  let readDatabase: ReturnType<typeof openDatabase> | undefined;
  if (config.databaseReadUrl !== undefined) {
    readDatabase = open(config.databaseReadUrl);
    stop.closeOnStop(() => readDatabase?.close());
    const replicaReads = new ReplicaReads(database.db, readDatabase.db);
    if (!(await replicaReads.check())) {
      logger.warn("the read replica does not answer: reads go to the primary until it does");
    }
    reads = replicaReads;
    logger.info(`reads routed to ${describeStore(config.databaseReadUrl)}`);
  }
  return { database, readDatabase, reads };
}

/** The outbox relay in this process, when NATS_URL is set and OUTBOX_RELAY is not off. */
function startRelay(config: Config, db: Db, logger: Logger, metrics: OutboxMetrics) {
  // Events always go to the outbox; they leave it only when a relay runs.
  const { nats, relayInProcess } = config.events;
  const relay =
    nats && relayInProcess
      ? new OutboxRelay({
          db,
          target: nats,
          logger,
          metrics,
          batchSize: config.events.batchSize,
          leaseMs: config.events.leaseMs,
        })
      : undefined;
  relay?.start();
  logger.info(
    { nats: nats?.url, stream: nats?.stream, relay: relay !== undefined },
    relay
      ? "outbox relay on"
      : nats
        ? "outbox relay off here (OUTBOX_RELAY=off): run npm run relay"
        : "outbox relay off (no NATS_URL): events wait in the outbox",
  );
  return relay;
}

/** Listens, or cleans up and throws the one line that names the setting (`PORT`, `METRICS_PORT`). */
async function listenNamed(
  setting: Parameters<typeof listenFailure>[3],
  host: string,
  port: number,
  listen: () => Promise<void>,
  cleanUp: () => Promise<void>,
): Promise<void> {
  try {
    await listen();
  } catch (err) {
    await cleanUp();
    const line = listenFailure(err, host, port, setting);
    throw line === undefined ? err : new StartupError(line);
  }
}

runEntry(main, {
  databaseUrl: () => loaded?.databaseUrl,
  debug: () => loaded?.logLevel === "debug" || loaded?.logLevel === "trace",
  flush: () => {
    if (startupLogger !== undefined) flushLogSync(startupLogger);
  },
});
