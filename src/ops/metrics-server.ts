import { createServer, type Server } from "node:http";
import type { Metrics } from "./metrics.js";

/** Scrapes come every few seconds; a connection idle longer is dropped. */
const KEEP_ALIVE_TIMEOUT_MS = 30_000;
/** A scrape request that has not fully arrived by then is dropped. */
const REQUEST_TIMEOUT_MS = 5000;

/**
 * The Prometheus endpoint on a listener of its own (METRICS_PORT), never the
 * public port: a scrape answer is about 23 KB for a few bytes asked, and one
 * client pipelining requests without reading them could hold the public
 * port's event loop and memory. Serves `GET /metrics` only; 404 otherwise.
 * Not listening yet: call `listen(port, host)`.
 */
export function metricsServer(metrics: Metrics): Server {
  const server = createServer(
    { requestTimeout: REQUEST_TIMEOUT_MS, maxHeaderSize: 8 * 1024 },
    (req, res) => {
      const path = (req.url ?? "").split("?")[0];
      if (req.method !== "GET" || path !== "/metrics") {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
        return;
      }
      metrics.registry.metrics().then(
        (body) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(body),
        () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics failed\n"),
      );
    },
  );
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  return server;
}
