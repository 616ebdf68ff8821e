/** Creates the configured database if missing and applies pending migrations. */
// First: refuses a Node too old before anything native loads.
import "../src/ops/node-version.js";
import { type Config, DEFAULT_DATABASE_URL, loadConfig } from "../src/config.js";
import { createDatabaseIfMissing, openDatabase } from "../src/db/connect.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { databaseLimits } from "../src/edge/call-limits.js";
import { runEntry } from "../src/ops/startup-errors.js";

let config: Config | undefined;

runEntry(
  async () => {
    config = loadConfig();
    await createDatabaseIfMissing(config.databaseUrl, config.dbConnectTimeoutMs, {
      createFolder: config.databaseUrl === DEFAULT_DATABASE_URL,
    });
    const { db, close } = openDatabase({
      url: config.databaseUrl,
      poolSize: 1,
      connectTimeoutMs: config.dbConnectTimeoutMs,
      limits: databaseLimits(config),
    });
    try {
      const applied = await migrateToLatest(db);
      console.log(applied.length ? `applied: ${applied.join(", ")}` : "already up to date");
    } finally {
      await close();
    }
  },
  { databaseUrl: () => config?.databaseUrl, debug: () => config?.logLevel === "debug" },
);
