import type { Logger } from "pino";
import type { Config } from "../config.js";
import { createDatabaseIfMissing } from "../db/connect.js";
import { databaseFailure, databaseMayHeal, StartupError } from "./startup-errors.js";
import type { Stop } from "./stop-signals.js";

/**
 * Creates the database if missing, retrying for DATABASE_WAIT_MS only while
 * the server may still be starting; a refused login, an unknown host or a
 * missing right ends the start at once. One warning, not one per try.
 */
export async function waitForDatabase(config: Config, logger: Logger, stop: Stop): Promise<void> {
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
