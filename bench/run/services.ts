/**
 * The processes under test: the service itself and the bare Fastify
 * baseline, each on a free port with the bench's secret and pool size.
 */

import { type Child, freePort, startChild } from "../lib/children.js";
import { POOL_SIZE, SECRET } from "./settings.js";

/** Starts `src/main.ts` as in production, logging only warnings. */
export async function startService(
  name: string,
  dbUrl: string,
  flags: string[] = [],
): Promise<Child> {
  return startChild(
    name,
    "src/main.ts",
    {
      PORT: String(await freePort()),
      METRICS_PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: dbUrl,
      JWT_SECRET: SECRET,
      LOG_LEVEL: "warn",
      DB_POOL_SIZE: String(POOL_SIZE),
      NODE_ENV: "production",
    },
    flags,
  );
}

/** Starts the hand-written Fastify + mysql2 baseline (bench/servers/bare-fastify.ts). */
export async function startBare(name: string, dbUrl: string): Promise<Child> {
  return startChild(name, "bench/servers/bare-fastify.ts", {
    PORT: String(await freePort()),
    DATABASE_URL: dbUrl,
    JWT_SECRET: SECRET,
    DB_POOL_SIZE: String(POOL_SIZE),
  });
}

/** Starts the Connect-only server with a given gzip threshold, for the gzip phase. */
export async function startConnectOnly(
  name: string,
  dbUrl: string,
  compressMinBytes: number,
): Promise<Child> {
  return startChild(name, "bench/servers/connect-only.ts", {
    PORT: String(await freePort()),
    DATABASE_URL: dbUrl,
    JWT_SECRET: SECRET,
    COMPRESS_MIN_BYTES: String(compressMinBytes),
    DB_POOL_SIZE: String(POOL_SIZE),
  });
}
