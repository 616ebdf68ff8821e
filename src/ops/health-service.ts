import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import { errors } from "../app/errors.js";
import type { HealthMonitor } from "./health.js";

/** How often a Watch stream re-probes the database to notice a change. */
const WATCH_INTERVAL_MS = 1000;

/**
 * `grpc.health.v1.Health` over the monitor. `services` are the names a
 * client may ask about besides "" (the whole server); all share one state,
 * since every service here stands or falls with the database.
 */
export function healthService(
  monitor: HealthMonitor,
  services: readonly string[],
): ServiceImpl<typeof Health> {
  const known = new Set(["", ...services]);
  const current = async (service: string): Promise<ServingStatus> => {
    if (!known.has(service)) return ServingStatus.SERVICE_UNKNOWN;
    return (await monitor.state()) === "serving"
      ? ServingStatus.SERVING
      : ServingStatus.NOT_SERVING;
  };

  return {
    async check(req) {
      const status = await current(req.service);
      if (status === ServingStatus.SERVICE_UNKNOWN) {
        throw errors.unknownService();
      }
      return { status };
    },

    // The status now, then each change, until the client leaves or the
    // server drains: the last message of a draining server is NOT_SERVING,
    // then the stream ends at once with `unavailable` (as a server going
    // away does), so shutdown does not wait for it.
    async *watch(req, ctx): AsyncGenerator<HealthCheckResponse> {
      let last = await current(req.service);
      yield create(HealthCheckResponseSchema, { status: last });
      while (!ctx.signal.aborted && !monitor.draining) {
        await nextTick(monitor, ctx.signal);
        const status = await current(req.service);
        if (status !== last) {
          last = status;
          yield create(HealthCheckResponseSchema, { status });
        }
      }
      if (monitor.draining) throw shuttingDown();
    },
  };
}

/** How a long stream ends when the server drains. */
export const shuttingDown = errors.shuttingDown;

/** Resolves after WATCH_INTERVAL_MS, or sooner on a drain or when `signal` aborts. */
function nextTick(monitor: HealthMonitor, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stop();
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, WATCH_INTERVAL_MS);
    const stop = monitor.onChange(done);
    signal.addEventListener("abort", done);
  });
}
