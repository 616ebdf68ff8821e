/**
 * The service: waits for the database, migrates, builds the app, listens on
 * one port and stops on a signal. Started by main.ts, after tracing.
 */
import { type Logger, pino } from "pino";
import { createAuthenticator } from "./auth/authenticator.js";
import { devSecret } from "./auth/tokens.js";
import { type Config, loadConfig } from "./config.js";
import { createDatabaseIfMissing, describeStore, openDatabase } from "./db/connect.js";
import { insertDemoContent, liveQuizIds } from "./db/demo-content.js";
import { migrateToLatest } from "./db/migrate.js";
import { type ReadRouting, ReplicaReads } from "./db/read-routing.js";
import { demoToken, localBase, practiceLinkLines, seedDemoCommand } from "./demo-hints.js";
import { systemClock } from "./domain/clock.js";
import { databaseLimits } from "./edge/call-limits.js";
import { metricsListener } from "./edge/metrics-listener.js";
import { servePort } from "./edge/one-port.js";
import { OutboxRelay } from "./events/relay.js";
import { OutboxMetrics } from "./events/relay-metrics.js";
import { Admission, admissionLimits } from "./ops/admission.js";
import { HealthMonitor } from "./ops/health.js";
import { Metrics } from "./ops/metrics.js";
import { projectRoot, requirePatches } from "./ops/patches-applied.js";
import {
  checkTlsFiles,
  databaseFailure,
  databaseMayHeal,
  flushLogSync,
  listenFailure,
  runEntry,
  StartupError,
} from "./ops/startup-errors.js";
import { type Stop, stopOnSignals } from "./ops/stop-signals.js";
import { reportTraceExportFailures, stopTracing, tracingStarted } from "./ops/tracing.js";
import { buildServer } from "./server.js";
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

  // loadConfig refuses a missing key in production; elsewhere use a dev secret.
  const devMode = !config.jwt.secret && !config.jwt.publicKeyPem && !config.jwt.jwksUrl;
  const jwt = devMode ? { ...config.jwt, secret: devSecret() } : config.jwt;

  await waitForDatabase(config, logger, stop);
  const database = openDatabase({
    url: config.databaseUrl,
    poolSize: config.dbPoolSize,
    connectTimeoutMs: config.dbConnectTimeoutMs,
    ...databaseLimits(config),
  });
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
    readDatabase = openDatabase({
      url: config.databaseReadUrl,
      poolSize: config.dbPoolSize,
      connectTimeoutMs: config.dbConnectTimeoutMs,
      ...databaseLimits(config),
    });
    stop.closeOnStop(() => readDatabase?.close());
    const replicaReads = new ReplicaReads(database.db, readDatabase.db);
    if (!(await replicaReads.check())) {
      logger.warn("the read replica does not answer: reads go to the primary until it does");
    }
    reads = replicaReads;
    logger.info(`reads routed to ${describeStore(config.databaseReadUrl)}`);
  }
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
  const app = await buildServer({
    admission: new Admission(
      admissionLimits(config.maxInFlight, config.maxQueuedPerUser, config.adaptiveAdmission),
    ),
    db: database.db,
    pool: database.pool,
    metrics,
    reads,
    health,
    corsOrigins: config.corsOrigins,
    trustProxy: config.trustProxy,
    requestTimeoutMs: config.requestTimeoutMs,
    clock: systemClock,
    authenticator: createAuthenticator(jwt, systemClock),
    logger,
    practicePage,
    rpcShortPath: config.rpcShortPath,
    tracing: tracingStarted(),
  });
  const port = servePort(app, { tls: config.tls, edge: config.edge });
  try {
    await port.listen(config.port, config.host);
  } catch (err) {
    await database.close();
    const line = listenFailure(err, config.host, config.port, "PORT");
    throw line === undefined ? err : new StartupError(line);
  }
  const address = port.server.address();
  const actualPort = typeof address === "object" && address ? address.port : config.port;
  // "listening" only once both ports are: a busy METRICS_PORT's line is then the last one.
  const scrape = metricsListener(metrics, health);
  try {
    await new Promise<void>((resolve, reject) => {
      scrape.once("error", reject);
      scrape.listen(config.metricsPort, config.host, () => resolve());
    });
  } catch (err) {
    await port.close(0);
    await database.close();
    const line = listenFailure(err, config.host, config.metricsPort, "METRICS_PORT");
    throw line === undefined ? err : new StartupError(line);
  }
  const scrapeAddress = scrape.address();
  const scrapePort = typeof scrapeAddress === "object" && scrapeAddress ? scrapeAddress.port : 0;
  logger.info({ port: actualPort, tls: config.tls !== undefined }, "listening");
  logger.info({ port: scrapePort }, "metrics listening (GET /metrics, /healthz, /readyz)");

  // Events always go to the outbox; they leave it only when a relay runs.
  const { nats, relayInProcess } = config.events;
  const relay =
    nats && relayInProcess
      ? new OutboxRelay({
          db: database.db,
          target: nats,
          logger,
          metrics: outboxMetrics,
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

  if (devMode && jwt.secret !== undefined) {
    const token = await demoToken(jwt.secret);
    const base = localBase(config, actualPort);
    const quiz = quizIds[0] ?? "QUIZ_ID";
    const pageLines =
      practicePage && quizIds.length > 0 ? practiceLinkLines(base, quiz, token) : [];
    console.log(
      [
        "",
        `Start here: ${base}/ (where to go next: the API document, health, the docs)`,
        `Metrics: http://127.0.0.1:${scrapePort}/metrics (METRICS_PORT)`,
        `Store: ${describeStore(config.databaseUrl)}`,
        ...pageLines,
        "No JWT key configured: using a development secret (.dev-jwt-secret). Token for user 'demo':",
        `  export TOKEN=${token}`,
        ...(quizIds.length > 0
          ? [`Try it on quiz ${quiz}:`]
          : [
              "No quizzes yet. To add the two demo quizzes to this store, run in another shell:",
              `  ${seedDemoCommand(config.databaseUrl)}`,
              "(it prints the practice link). Then try it:",
            ]),
        `  curl -s -X POST -H "authorization: Bearer $TOKEN" ${base}/quizzes/${quiz}/sessions`,
        `  curl -s -H "authorization: Bearer $TOKEN" ${base}/quizzes/${quiz}/sessions`,
        "",
      ].join("\n"),
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
 * Creates the database if missing, retrying for DATABASE_WAIT_MS only while
 * the server may still be starting; a refused login, an unknown host or a
 * missing right ends the start at once. One warning, not one per try.
 */
async function waitForDatabase(config: Config, logger: pino.Logger, stop: Stop) {
  const deadline = Date.now() + config.databaseWaitMs;
  let warned = false;
  for (;;) {
    try {
      await stop.until(createDatabaseIfMissing(config.databaseUrl, config.dbConnectTimeoutMs));
      return;
    } catch (err) {
      if (!databaseMayHeal(err) || Date.now() >= deadline) {
        const line = databaseFailure(err, config.databaseUrl);
        throw line === undefined ? err : new StartupError(line);
      }
      if (!warned) {
        warned = true;
        const seconds = config.databaseWaitMs / 1000;
        logger.warn(
          { err: String(err) },
          `database not reachable yet: will keep trying for ${seconds} s (DATABASE_WAIT_MS)`,
        );
      }
      await stop.until(
        new Promise((resolve) => setTimeout(resolve, Math.min(1000, deadline - Date.now()))),
      );
    }
  }
}

runEntry(main, {
  databaseUrl: () => loaded?.databaseUrl,
  debug: () => loaded?.logLevel === "debug" || loaded?.logLevel === "trace",
  flush: () => {
    if (startupLogger !== undefined) flushLogSync(startupLogger);
  },
});
