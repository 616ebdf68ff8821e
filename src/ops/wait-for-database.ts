import type { Logger } from "pino";
import { type Config, DEFAULT_DATABASE_URL } from "../config.js";
import { createDatabaseIfMissing } from "../db/connect.js";
import { databaseFailure, databaseMayHeal, StartupError } from "./startup-errors.js";
import type { Stop } from "./stop-signals.js";

/**
 * Creates the database if missing, retrying for DATABASE_WAIT_MS only while
 * the server may still be starting; a refused login, an unknown host or a
 * missing right ends the start at once. One warning, saying how long it will
 * keep trying, not one per try; no try outlasts the wait, and the last line
 * says how long it waited.
 */
export async function waitForDatabase(config: Config, logger: Logger, stop: Stop): Promise<void> {
  const deadline = Date.now() + config.databaseWaitMs;
  const seconds = config.databaseWaitMs / 1000;
  let warned = false;
  for (;;) {
    try {
      const connectTimeoutMs = Math.max(
        1,
        Math.min(config.dbConnectTimeoutMs, deadline - Date.now()),
      );
      await stop.until(
        createDatabaseIfMissing(config.databaseUrl, connectTimeoutMs, {
          // The default store's ./data is made; any other SQLite folder must exist.
          createFolder: config.databaseUrl === DEFAULT_DATABASE_URL,
        }),
      );
      return;
    } catch (err) {
      if (!databaseMayHeal(err) || Date.now() >= deadline) {
        const line = databaseFailure(err, config.databaseUrl);
        if (line === undefined) throw err;
        throw new StartupError(
          warned ? `${line}; tried for ${seconds} s (DATABASE_WAIT_MS)` : line,
        );
      }
      if (!warned) {
        warned = true;
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
