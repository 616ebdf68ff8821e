/**
 * Imported first by the entry points (main.ts, scripts/relay.ts), before the
 * rest of the service is: starts OpenTelemetry before the modules it
 * instruments load, when an OTEL_* variable asks for traces (ops/tracing.ts).
 * Otherwise it loads nothing. A bad variable is left to the entry point's
 * loadConfig, which names it in its one-line start-up error.
 */
import { ConfigError, tracingConfig } from "./config.js";
import { startTracing } from "./ops/tracing.js";

let config: ReturnType<typeof tracingConfig>;
try {
  config = tracingConfig();
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
}
if (config !== undefined) await startTracing(config);
