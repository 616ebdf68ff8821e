import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type ClientHttp2Session, connect, constants } from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { bump, Latencies, type LoadResult, loadResult } from "./stats.js";

/** One call: resolves to a status label ("200", "OK", "UNAVAILABLE"...), never rejects. */
export type Call = () => Promise<string>;

/** Closed loop: `concurrency` callers, each sends its next call when the last is answered. */
export async function closedLoop(
  call: Call,
  concurrency: number,
  durationMs: number,
  expect: string,
): Promise<LoadResult> {
  const lat = new Latencies();
  const statuses: Record<string, number> = {};
  let errors = 0;
  const began = performance.now();
  const caller = async () => {
    while (performance.now() - began < durationMs) {
      const t0 = performance.now();
      const status = await call();
      lat.add(performance.now() - t0);
      bump(statuses, status);
      if (status !== expect) errors++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, caller));
  return loadResult(lat, statuses, errors, performance.now() - began);
}

/**
 * Open loop: `rate` calls a second for `durationMs`, each on schedule; latency
 * counts from the scheduled time, so a stalled service cannot hide its queue.
 */
export async function openLoop(
  call: Call,
  rate: number,
  durationMs: number,
  expect: string,
): Promise<LoadResult & { admitted: { p50: number; p99: number } }> {
  const lat = new Latencies();
  const admitted = new Latencies();
  const statuses: Record<string, number> = {};
  let errors = 0;
  let sent = 0;
  let pending = 0;
  const total = Math.max(1, Math.floor((rate * durationMs) / 1000));
  const began = performance.now();
  await new Promise<void>((resolve) => {
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - began) * rate) / 1000) + 1);
      while (sent < due) {
        const scheduled = began + (sent * 1000) / rate;
        sent++;
        pending++;
        void call().then((status) => {
          const ms = performance.now() - scheduled;
          lat.add(ms);
          bump(statuses, status);
          if (status === expect) admitted.add(ms);
          else errors++;
          if (--pending === 0 && sent >= total) resolve();
        });
      }
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  const result = loadResult(lat, statuses, errors, performance.now() - began);
  const { p50, p99 } = admitted.summary();
  return { ...result, admitted: { p50, p99 } };
}

/** Every call of `calls` sent at once; resolves with each one's status and latency. */
export async function burst(
  calls: Call[],
): Promise<{ statuses: Record<string, number>; byStatus: Map<string, Latencies>; ms: number }> {
  const statuses: Record<string, number> = {};
  const byStatus = new Map<string, Latencies>();
  const began = performance.now();
  await Promise.all(
    calls.map(async (call) => {
      const status = await call();
      const lat = byStatus.get(status) ?? new Latencies();
      lat.add(performance.now() - began);
      byStatus.set(status, lat);
      bump(statuses, status);
    }),
  );
  return { statuses, byStatus, ms: performance.now() - began };
}

/** An HTTP/2 request, sent as is: the client encodes nothing per call. */
export interface H2Request {
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array;
}

/**
 * One h2c connection carrying REST, Connect and gRPC calls alike; a thin client,
 * to leave the CPU to the server. Statuses: grpc-status names, else HTTP.
 */
export class H2Client {
  readonly #session: ClientHttp2Session;

  constructor(port: number) {
    this.#session = connect(`http://127.0.0.1:${port}`);
    this.#session.on("error", () => {});
  }

  call(req: H2Request): Promise<string> {
    return new Promise((resolve) => {
      const stream = this.#session.request({
        ":method": req.method,
        ":path": req.path,
        ...req.headers,
      });
      let status = "";
      let grpcStatus: string | undefined;
      stream.on("response", (headers) => {
        status = String(headers[":status"]);
        grpcStatus = headers["grpc-status"] as string | undefined;
      });
      stream.on("trailers", (trailers) => {
        grpcStatus = (trailers["grpc-status"] as string | undefined) ?? grpcStatus;
      });
      stream.on("data", () => {});
      stream.on("error", (err) => resolve(`error:${err.message.slice(0, 40)}`));
      stream.on("close", () => {
        if (grpcStatus !== undefined) resolve(GRPC_CODES[Number(grpcStatus)] ?? grpcStatus);
        else resolve(status || `error:${stream.rstCode ?? constants.NGHTTP2_INTERNAL_ERROR}`);
      });
      stream.end(req.body);
    });
  }

  close(): void {
    this.#session.close();
  }
}

const GRPC_CODES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];

/** A gRPC unary request of the encoded message `bin`: the 5-byte frame header, then the message. */
export function grpcRequest(path: string, bin: Uint8Array, token: string): H2Request {
  const body = Buffer.alloc(5 + bin.length);
  body.writeUInt32BE(bin.length, 1);
  body.set(bin, 5);
  return {
    method: "POST",
    path,
    headers: {
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${token}`,
    },
    body,
  };
}

/** HTTP/1.1 closed loop with autocannon (in-process, far cheaper per call than fetch). */
export async function httpLoad(o: {
  port: number;
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: string;
  connections: number;
  /** Calls a second over all connections; a closed loop when undefined. */
  rate?: number | undefined;
  durationMs: number;
  expect: number;
}): Promise<LoadResult> {
  const lat = new Latencies();
  const statuses: Record<string, number> = {};
  let errors = 0;
  const began = performance.now();
  let finished: (err: unknown) => void = () => {};
  const done = new Promise<void>((resolve, reject) => {
    finished = (err) => (err ? reject(err) : resolve());
  });
  const instance = autocannon(
    {
      url: `http://127.0.0.1:${o.port}${o.path}`,
      method: o.method,
      headers: o.headers,
      body: o.body,
      connections: o.connections,
      ...(o.rate ? { overallRate: o.rate } : {}),
      duration: o.durationMs / 1000,
    },
    finished,
  );
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    lat.add(responseTime);
    bump(statuses, String(statusCode));
    if (statusCode !== o.expect) errors++;
  });
  instance.on("reqError", () => {
    bump(statuses, "error");
    errors++;
  });
  await done;
  return loadResult(lat, statuses, errors, performance.now() - began);
}

/** Whether h2load (Debian: nghttp2-client) is on this machine. */
export const hasH2load = spawnSync("h2load", ["--version"]).status === 0;

/**
 * `req` in a closed loop with h2load, a native HTTP/2 client: `connections`
 * connections each with `streams` calls in flight, for `durationMs`. Its own
 * CPU is far less than a Node client's, so more of the machine is the
 * server's. Latencies from its per-request log; an answer other than 200 is
 * an error (a gRPC status is not read: the service's answers here are OK).
 */
export async function h2load(
  req: H2Request,
  o: { port: number; connections: number; streams: number; durationMs: number },
): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), "h2load-"));
  try {
    const body = join(dir, "body");
    writeFileSync(body, req.body ?? new Uint8Array());
    const logFile = join(dir, "log");
    const args = [
      `http://127.0.0.1:${o.port}${req.path}`,
      "-c",
      String(o.connections),
      "-m",
      String(o.streams),
      "-D",
      String(o.durationMs / 1000),
      "-d",
      body,
      `--log-file=${logFile}`,
      ...Object.entries(req.headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]),
    ];
    await new Promise<void>((resolve, reject) => {
      const child = spawn("h2load", args, { stdio: "ignore" });
      child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`h2load ${code}`))));
    });
    const lat = new Latencies();
    const statuses: Record<string, number> = {};
    for (const line of readFileSync(logFile, "utf8").split("\n")) {
      const [, status, us] = line.split("\t");
      if (status === undefined || us === undefined) continue;
      statuses[status] = (statuses[status] ?? 0) + 1;
      lat.add(Number(us) / 1000);
    }
    const errors = Object.entries(statuses)
      .filter(([status]) => status !== "200")
      .reduce((n, [, count]) => n + count, 0);
    return loadResult(lat, statuses, errors, o.durationMs);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
