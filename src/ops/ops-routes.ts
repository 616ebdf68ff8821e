import type { FastifyInstance } from "fastify";
import { errors } from "../domain/errors.js";
import { sendProblem } from "../rest/problem.js";
import type { HealthMonitor } from "./health.js";
import type { Metrics } from "./metrics.js";

export interface OpsRoutesOptions {
  health: HealthMonitor;
  metrics: Metrics;
}

/**
 * `/healthz` (liveness: the process answers), `/readyz` (readiness: the
 * database answers, migrations are applied, not draining) and `/metrics`
 * (Prometheus). No authentication: probes and scrapers carry no token, and
 * none of these reveal user data. Their log lines are at debug level
 * (`quiet`): probes come every few seconds and would drown the request log.
 */
export async function opsRoutes(app: FastifyInstance, { health, metrics }: OpsRoutesOptions) {
  const quiet = { config: { quiet: true } };
  app.get("/healthz", quiet, async () => ({ status: "ok" }));

  app.get("/readyz", quiet, async (_request, reply) => {
    if (await health.ready()) return { status: "ready" };
    return sendProblem(reply, errors.unavailable());
  });

  app.get("/metrics", quiet, async (_request, reply) => {
    const body = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(body);
  });
}
