import type { Pool } from "mysql2";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Admission } from "./admission.js";
import type { MemorySettle } from "./memory-settle.js";

/** How a request came in; "preflight" is a browser's CORS OPTIONS before a call. */
export type Transport = "rest" | "connect" | "grpc" | "grpc-web" | "preflight";

/** The transport of an RPC, from its request's content type. */
export function rpcTransport(contentType: string | undefined): Transport {
  const type = contentType ?? "";
  if (type.startsWith("application/grpc-web")) return "grpc-web";
  if (type.startsWith("application/grpc")) return "grpc";
  return "connect";
}

/** Request latency buckets, in seconds: sub-millisecond cache hits to slow outliers. */
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * mysql2 keeps its pool's state in queues it does not type or export
 * (`_allConnections`, `_freeConnections`, `_connectionQueue`): read their
 * length with a check rather than a cast, 0 if a version renames them.
 */
function queueLength(pool: Pool, field: string): number {
  const queue: unknown = Reflect.get(pool, field);
  const length = typeof queue === "object" && queue !== null ? Reflect.get(queue, "length") : 0;
  return typeof length === "number" ? length : 0;
}

/**
 * The service's Prometheus metrics: requests and their latency by transport,
 * procedure (RPC path or REST route pattern) and code (Connect code string,
 * for REST too), the database pool, and prom-client's process metrics.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly #requests: Counter<"transport" | "procedure" | "code">;
  readonly #latency: Histogram<"transport" | "procedure" | "code">;
  constructor(pool?: Pool) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.#requests = new Counter({
      name: "practice_requests_total",
      help: "Requests served, by transport, procedure or route, and Connect code.",
      labelNames: ["transport", "procedure", "code"],
      registers,
    });
    this.#latency = new Histogram({
      name: "practice_request_duration_seconds",
      help: "Time from the request's arrival to the end of its response.",
      labelNames: ["transport", "procedure", "code"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    if (pool !== undefined) registerPoolGauges(pool, registers);
  }

  /** Counts one finished request that took `seconds`. */
  observe(transport: Transport, procedure: string, code: string, seconds: number): void {
    const labels = { transport, procedure, code };
    this.#requests.inc(labels);
    this.#latency.observe(labels, seconds);
  }

  /** Exposes admission control's state: calls running, waiting, the limit and those shed. */
  watchAdmission(admission: Admission): void {
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read());
        },
      });
    gauge(
      "practice_admission_in_flight",
      "Calls running their use case now.",
      () => admission.inFlight,
    );
    gauge("practice_admission_queued", "Calls waiting for a slot now.", () => admission.queued);
    gauge("practice_admission_limit", "Calls that may run at once now.", () => admission.limit);
    // Calls by what admission did with them (never by user: one series per outcome).
    new Counter({
      name: "practice_admission_calls_total",
      help: "Calls by admission outcome since start: admitted (given a slot), queued (waited for one), refused_share (429 / resource_exhausted: the caller's share of the queue was full), shed (503 / unavailable: overload).",
      labelNames: ["outcome"],
      registers,
      collect() {
        this.reset();
        this.inc({ outcome: "admitted" }, admission.admitted);
        this.inc({ outcome: "queued" }, admission.waited);
        this.inc({ outcome: "refused_share" }, admission.refusedOverShare);
        this.inc({ outcome: "shed" }, admission.shed);
      },
    });
    new Counter({
      name: "practice_admission_shed_total",
      help: "Calls refused by admission control (503 / unavailable) since start.",
      registers,
      collect() {
        this.reset();
        this.inc(admission.shed);
      },
    });
  }
}

/** Exposes how often memory was given back after the service grew (ops/memory-settle.ts). */
export function watchMemory(metrics: Metrics, memory: MemorySettle): void {
  new Counter({
    name: "practice_memory_collections_total",
    help: "Full collections made once the service was quiet after its memory grew.",
    registers: [metrics.registry],
    collect() {
      this.reset();
      this.inc(memory.collections);
    },
  });
}

function registerPoolGauges(pool: Pool, registers: Registry[]) {
  const all = () => queueLength(pool, "_allConnections");
  const idle = () => queueLength(pool, "_freeConnections");
  new Gauge({
    name: "practice_db_pool_connections",
    help: "Database pool connections, by state (in_use, idle).",
    labelNames: ["state"],
    registers,
    collect() {
      this.set({ state: "in_use" }, all() - idle());
      this.set({ state: "idle" }, idle());
    },
  });
  new Gauge({
    name: "practice_db_pool_waiting",
    help: "Queries waiting for a pool connection.",
    registers,
    collect() {
      this.set(queueLength(pool, "_connectionQueue"));
    },
  });
}
