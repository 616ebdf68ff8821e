import { type EntryRun, runEntryPoint } from "./entry.js";
import { TEST_SECRET } from "./service.js";

/**
 * `npm start` on `databaseUrl` until it exits, as quick to start as it gets on its own (no
 * page build, no NATS, a second's wait for the database): for starts that must fail.
 */
export function startServiceOn(databaseUrl: string): Promise<EntryRun> {
  return runEntryPoint("src/main.ts", {
    env: {
      HOST: "127.0.0.1",
      PORT: "0",
      METRICS_PORT: "0",
      DATABASE_URL: databaseUrl,
      DATABASE_WAIT_MS: "1000",
      JWT_SECRET: TEST_SECRET,
      LOG_LEVEL: "silent",
      PRACTICE_PAGE: "off",
      NATS_URL: undefined,
      NODE_ENV: undefined,
    },
  });
}
