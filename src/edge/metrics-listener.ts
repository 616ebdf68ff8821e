import { createServer, type Server } from "node:http";
import { METRICS_LISTENER } from "../limits.js";
import type { HealthMonitor } from "../ops/health.js";
import type { Metrics } from "../ops/metrics.js";

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
    {
      requestTimeout: METRICS_LISTENER.requestTimeoutMs,
      maxHeaderSize: METRICS_LISTENER.maxHeaderBytes,
    },
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
  server.keepAliveTimeout = METRICS_LISTENER.keepAliveTimeoutMs;
  server.maxConnections = METRICS_LISTENER.maxConnections;
  return server;
}
