import { loadConfig } from "../../src/config.js";
import { databaseLimits } from "../../src/edge/call-limits.js";
import { Admission } from "../../src/ops/admission.js";

/**
 * What `buildApp` takes from the service's settings, as config.ts defaults
 * them: a test overrides only what it is about.
 */
export function defaultAppSettings() {
  const config = loadConfig({});
  return {
    requestTimeoutMs: config.requestTimeoutMs,
    rpcShortPath: config.rpcShortPath,
    admission: new Admission(config.admission),
  };
}

/** The database's limits as the service's default settings give them (edge/call-limits.ts). */
export function defaultDatabaseLimits() {
  return databaseLimits(loadConfig({}));
}
