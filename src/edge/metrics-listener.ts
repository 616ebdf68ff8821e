import { createServer, type Server } from "node:http";
import type { HealthMonitor } from "../ops/health.js";
import type { Metrics } from "../ops/metrics.js";

/** Scrapes and probes come every few seconds; a connection idle longer is dropped. */
const KEEP_ALIVE_TIMEOUT_MS = 30_000;
/** A request that has not fully arrived by then is dropped. */
const REQUEST_TIMEOUT_MS = 5000;
/** Scrapers and probes are a handful: more connections than this are refused as they come. */
const MAX_CONNECTIONS = 256;
/** Their requests are a line and a few headers. */
const MAX_HEADER_BYTES = 8 * 1024;

/**
 * The operators' listener (METRICS_PORT), never the public port: Prometheus
 * `GET /metrics`, and `/healthz` and `/readyz` as on the public port, so
 * that probes are answered whatever holds the public port's connections (a
 * flood of them fills its cap; this port is not exposed by any Service).
 * A scrape answer is about 23 KB for a few bytes asked, which is why it is
 * not on the public port. 404 for anything else.
 * Not listening yet: call `listen(port, host)`.
 */
export function metricsListener(metrics: Metrics, health: HealthMonitor): Server {
  const server = createServer(
    { requestTimeout: REQUEST_TIMEOUT_MS, maxHeaderSize: MAX_HEADER_BYTES },
    (req, res) => {
      const path = (req.url ?? "").split("?")[0];
      const text = (status: number, body: string) =>
        res.writeHead(status, { "content-type": "text/plain" }).end(body);
      const json = (status: number, body: object) =>
        res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.method !== "GET") text(404, "not found\n");
      else if (path === "/healthz") json(200, { status: "ok" });
      else if (path === "/readyz") {
        health.ready().then(
          (ready) => (ready ? json(200, { status: "ready" }) : json(503, { status: "not ready" })),
          () => json(503, { status: "not ready" }),
        );
      } else if (path === "/metrics") {
        metrics.registry.metrics().then(
          (body) => res.writeHead(200, { "content-type": metrics.registry.contentType }).end(body),
          () => text(500, "metrics failed\n"),
        );
      } else text(404, "not found\n");
    },
  );
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.maxConnections = MAX_CONNECTIONS;
  return server;
}
