import { cors as connectCors } from "@connectrpc/connect";
import fastifyCors from "@fastify/cors";
import type { App } from "../app-server.js";

/**
 * Lets browser pages from `origins` call the service: Connect and gRPC-Web
 * (Connect's own header lists) and REST (plus `authorization`, the W3C Trace Context headers, and the
 * `location` and `x-request-id` response headers). @fastify/cors is wrapped in
 * fastify-plugin, so registered on the root it covers every scope, the
 * Connect plugin's and the REST gateway's alike. No origins, no CORS headers:
 * browsers then refuse cross-origin calls, the safe default.
 */
export async function registerCors(app: App, origins: readonly string[]) {
  if (origins.length === 0) return;
  await app.register(fastifyCors, {
    origin: [...origins],
    methods: [...new Set([...connectCors.allowedMethods, "GET", "POST", "OPTIONS"])],
    // traceparent and tracestate: W3C Trace Context, so a page's call joins its trace.
    allowedHeaders: [
      ...connectCors.allowedHeaders,
      "authorization",
      "x-request-id",
      "traceparent",
      "tracestate",
    ],
    exposedHeaders: [...connectCors.exposedHeaders, "location", "x-request-id"],
    // Browsers may cache a preflight this long (seconds) instead of one per call.
    maxAge: 7200,
  });
}
