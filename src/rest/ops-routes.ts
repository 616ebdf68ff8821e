import { errors } from "../app/errors.js";
import type { App } from "../app-server.js";
import type { HealthMonitor } from "../ops/health.js";
import { sendProblem } from "./send-problem.js";

export interface OpsRoutesOptions {
  health: HealthMonitor;
}

/**
 * `/healthz` (the process answers) and `/readyz` (database, migrations, not
 * draining), from cached state and without authentication: probes carry no
 * token. Logged at debug level, or probes would drown the request log.
 */
export async function opsRoutes(app: App, { health }: OpsRoutesOptions) {
  const quiet = { config: { quiet: true } };
  app.get("/healthz", quiet, async () => ({ status: "ok" }));

  app.get("/readyz", quiet, async (_request, reply) => {
    if (await health.ready()) return { status: "ready" };
    return sendProblem(reply, errors.unavailable());
  });
}
