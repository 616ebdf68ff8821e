/** Creates the configured database if missing and applies pending migrations. */
import { loadConfig } from "../src/config.js";
import { createDatabaseIfMissing, openDatabase } from "../src/db/connect.js";
import { migrateToLatest } from "../src/db/migrate.js";

const config = loadConfig();
await createDatabaseIfMissing(config.databaseUrl);
const { db, close } = openDatabase({
  url: config.databaseUrl,
  poolSize: 1,
  connectTimeoutMs: 5000,
});
try {
  const applied = await migrateToLatest(db);
  console.log(applied.length ? `applied: ${applied.join(", ")}` : "already up to date");
} finally {
  await close();
}
