import * as grpc from "@grpc/grpc-js";
import autocannon from "autocannon";
import { bump, Latencies, type LoadResult, loadResult } from "./stats.js";

/** How long a run lasts: a duration, or a number of requests. */
export type Bound = { durationMs: number } | { amount: number };

/** One request: resolves to a status label ("200", "OK", ...) or rejects. */
export type Call = (i: number) => Promise<string>;

/**
 * Closed loop: `concurrency` workers, each sends its next request when the
 * previous one is answered. Every status other than `expect` is an error.
 */
export async function closedLoop(
  call: Call,
  concurrency: number,
  bound: Bound,
  expect: string,
): Promise<LoadResult> {
  const lat = new Latencies();
  const statuses: Record<string, number> = {};
  let errors = 0;
  let next = 0;
  const began = performance.now();
  const deadline = "durationMs" in bound ? began + bound.durationMs : Number.POSITIVE_INFINITY;
  const amount = "amount" in bound ? bound.amount : Number.POSITIVE_INFINITY;
  const worker = async () => {
    while (performance.now() < deadline && next < amount) {
      const i = next++;
      const t0 = performance.now();
      let status: string;
      try {
        status = await call(i);
      } catch (err) {
        status = `error:${(err as Error).message.slice(0, 60)}`;
      }
      lat.add(performance.now() - t0);
      bump(statuses, status);
      if (status !== expect) errors++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return loadResult(lat, statuses, errors, performance.now() - began);
}

/**
 * Open loop at `rate` requests per second for `durationMs`: requests are sent
 * on schedule whether or not earlier ones are answered, and latency counts
 * from the scheduled time (no coordinated omission).
 */
export async function openLoop(
  call: Call,
  rate: number,
  durationMs: number,
  expect: string,
): Promise<LoadResult> {
  const lat = new Latencies();
  const statuses: Record<string, number> = {};
  let errors = 0;
  let sent = 0;
  let inFlight = 0;
  const total = Math.floor((rate * durationMs) / 1000);
  const began = performance.now();
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - began) * rate) / 1000));
      while (sent < due) {
        const scheduled = began + (sent * 1000) / rate;
        const i = sent++;
        inFlight++;
        call(i)
          .catch((err: Error) => `error:${err.message.slice(0, 60)}`)
          .then((status) => {
            lat.add(performance.now() - scheduled);
            bump(statuses, status);
            if (status !== expect) errors++;
            inFlight--;
            if (sent >= total && inFlight === 0) resolve();
          });
      }
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  return loadResult(lat, statuses, errors, performance.now() - began);
}

export interface HttpLoadOptions {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Per-request headers (e.g. one token per request); index counts from 0. */
  headersFor?: (i: number) => Record<string, string>;
  connections: number;
  bound: Bound;
  /** Open loop: requests per second over all connections (autocannon overallRate). */
  overallRate?: number;
  expect: number;
}

/** HTTP/1.1 load with autocannon; latencies come from its per-response event (sub-ms). */
export async function httpLoad(o: HttpLoadOptions): Promise<LoadResult> {
  const lat = new Latencies();
  const statuses: Record<string, number> = {};
  let errors = 0;
  let i = 0;
  const headersFor = o.headersFor;
  const began = performance.now();
  let done: (r: autocannon.Result) => void = () => {};
  let fail: (e: unknown) => void = () => {};
  const finished = new Promise<autocannon.Result>((resolve, reject) => {
    done = resolve;
    fail = reject;
  });
  const instance = autocannon(
    {
      url: o.url,
      method: o.method,
      headers: o.headers,
      body: o.body as string | undefined,
      connections: o.connections,
      ...("durationMs" in o.bound
        ? { duration: o.bound.durationMs / 1000 }
        : { amount: o.bound.amount }),
      ...(o.overallRate !== undefined && { overallRate: o.overallRate }),
      ...(headersFor && {
        requests: [
          {
            setupRequest: (req: autocannon.Request) => ({
              ...req,
              headers: { ...o.headers, ...headersFor(i++) },
            }),
          },
        ],
      }),
    },
    (err, result) => (err ? fail(err) : done(result)),
  );
  // autocannon ends `amount` runs on its 1-second tick: time to the last response instead.
  let last = began;
  instance.on("response", (_client, statusCode, _bytes, responseTime) => {
    last = performance.now();
    lat.add(responseTime);
    bump(statuses, String(statusCode));
    if (statusCode !== o.expect) errors++;
  });
  instance.on("reqError", () => {
    bump(statuses, "error");
    errors++;
  });
  const result = await finished;
  // Timeouts are not responses: count them as errors too.
  if (result.timeouts > 0) {
    statuses.timeout = result.timeouts;
    errors += result.timeouts;
  }
  const end = "amount" in o.bound ? last : performance.now();
  return loadResult(lat, statuses, errors, end - began);
}

/** A grpc-js client sending pre-encoded request bytes; responses are checked by status only. */
export class GrpcLoadClient {
  private readonly client: grpc.Client;

  /** `options`: grpc-js channel options (distinct ones give a client its own connection). */
  constructor(address: string, options: grpc.ChannelOptions = {}) {
    this.client = new grpc.Client(address, grpc.credentials.createInsecure(), options);
  }

  call(path: string, request: Buffer, metadata: grpc.Metadata): Promise<string> {
    return new Promise((resolve) => {
      this.client.makeUnaryRequest(
        path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        request,
        metadata,
        (err) => resolve(err ? (grpc.status[err.code] ?? String(err.code)) : "OK"),
      );
    });
  }

  /** Sends one request and returns the response bytes (for sanity checks). */
  callRaw(path: string, request: Buffer, metadata: grpc.Metadata): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        path,
        (b: Buffer) => b,
        (b: Buffer) => b,
        request,
        metadata,
        (err, res) => (err ? reject(err) : resolve(res as Buffer)),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}

export function bearer(token: string): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${token}`);
  return md;
}
