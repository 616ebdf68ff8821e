import { errors } from "../app/errors.js";
import type { App } from "../app-server.js";
import type { HealthMonitor } from "../ops/health.js";
import { sendProblem } from "./problem.js";

export interface OpsRoutesOptions {
  health: HealthMonitor;
}

/**
 * `/healthz` (liveness: the process answers) and `/readyz` (readiness: the
 * database answers, migrations are applied, not draining), both from cached
 * state: a flood of them costs no database work. `/metrics` has a listener
 * of its own (metrics-server.ts). No authentication: probes and scrapers carry no token, and
 * none of these reveal user data. Their log lines are at debug level
 * (`quiet`): probes come every few seconds and would drown the request log.
 */
export async function opsRoutes(app: App, { health }: OpsRoutesOptions) {
  const quiet = { config: { quiet: true } };
  app.get("/healthz", quiet, async () => ({ status: "ok" }));

  app.get("/readyz", quiet, async (_request, reply) => {
    if (await health.ready()) return { status: "ready" };
    return sendProblem(reply, errors.unavailable());
  });
}
