/**
 * `npm run relay`: the outbox relay alone (run-relay.ts). First refuses a
 * Node too old, then starts tracing when an OTEL_* variable asks for it,
 * before the modules it instruments load.
 */
import "../src/ops/node-version.js";
import "../src/ops/tick-shapes.js";

await import("../src/instrument.js");
await import("./run-relay.js");
