/**
 * Inserts a demo study guide with two quizzes of a few questions into the
 * configured database (migrating it first) and prints the quiz ids.
 */
import { loadConfig } from "../src/config.js";
import { createDatabaseIfMissing, openDatabase } from "../src/db/connect.js";
import { insertDemoContent } from "../src/db/demo-content.js";
import { migrateToLatest } from "../src/db/migrate.js";

const config = loadConfig();
await createDatabaseIfMissing(config.databaseUrl);
const { db, close } = openDatabase({
  url: config.databaseUrl,
  poolSize: 1,
  connectTimeoutMs: config.dbConnectTimeoutMs,
});
try {
  await migrateToLatest(db);
  const { studyGuideId, quizIds } = await insertDemoContent(db);
  console.log(`study guide ${studyGuideId}: quizzes ${quizIds.join(", ")}`);
  for (const id of quizIds) console.log(`  quiz ${id}: /quizzes/${id}/sessions`);
} finally {
  await close();
}
