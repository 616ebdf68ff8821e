/**
 * `npm start`: the service's entry. First refuses a Node too old, before
 * anything native loads; then starts tracing when an OTEL_* variable asks
 * for it (instrument.ts), before the modules it instruments load: hence the
 * rest is imported afterwards.
 */
import "./ops/node-version.js";
import "./ops/tick-shapes.js";

await import("./instrument.js");
await import("./run-service.js");
