/**
 * Puts the demo study guide and its two quizzes into the store `npm start`
 * uses (DATABASE_URL, else the same SQLite file), migrating it first, and
 * says which store that is. Running it again adds nothing: it prints the
 * ids of the demo quizzes already there. Then, as `npm start` does with the
 * same settings (PORT, the development JWT secret), the practice link.
 */
// First: refuses a Node too old before anything native loads.
import "../src/ops/node-version.js";
import { devSecret } from "../src/auth/tokens.js";
import { type Config, DEFAULT_DATABASE_URL, DEFAULT_PORT, loadConfig } from "../src/config.js";
import { createDatabaseIfMissing, describeStore, openDatabase } from "../src/db/connect.js";
import { ensureDemoContent } from "../src/db/demo-content.js";
import { migrateToLatest } from "../src/db/migrate.js";
import { demoToken, localBase, practiceLinkLines } from "../src/demo-hints.js";
import { databaseLimits } from "../src/edge/call-limits.js";
import { runEntry } from "../src/ops/startup-errors.js";

let config: Config | undefined;

runEntry(
  async () => {
    config = loadConfig();
    const store = describeStore(config.databaseUrl);
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
      await migrateToLatest(db);
      const { studyGuideId, quizIds, created } = await ensureDemoContent(db);
      console.log(
        created
          ? `Store: ${store}: added the demo study guide ${studyGuideId}`
          : `Store: ${store}: the demo study guide ${studyGuideId} is there already (nothing added)`,
      );
      for (const id of quizIds) console.log(`  quiz ${id}: /quizzes/${id}`);
      await printPracticeLink(config, quizIds[0]);
    } finally {
      await close();
    }
  },
  { databaseUrl: () => config?.databaseUrl, debug: () => config?.logLevel === "debug" },
);

/** The practice link `npm start` prints, when it prints one (no JWT key set, the page on). */
async function printPracticeLink(config: Config, quizId: string | undefined): Promise<void> {
  const { jwt } = config;
  const devMode = !jwt.secret && !jwt.publicKeyPem && !jwt.jwksUrl;
  if (!devMode || !config.practicePage || quizId === undefined) return;
  const token = await demoToken(devSecret());
  const port = config.port === 0 ? DEFAULT_PORT : config.port;
  console.log(practiceLinkLines(localBase(config, port), quizId, token).join("\n"));
  console.log("(a service already running lists the new quizzes at once: no restart needed)");
}
