/**
 * What the phases record and the report reads: one module holds the run's
 * results so that phases append and the report renders without passing them
 * through every call.
 */

import type { LoadResult } from "../lib/stats.js";

/** One timed load run of one target. */
export interface Run {
  section: string;
  target: string;
  scenario: string;
  concurrency: number | string;
  round: number;
  load: LoadResult;
  /** Server process CPU per request (µs); for `raw`, the harness process (client + driver). */
  cpuUsPerReq: number;
  /** Harness (load client) CPU per request (µs): both share the machine's 2 cores. */
  clientCpuUsPerReq: number;
  /** MariaDB process CPU per request (µs), all clients of the server included (noisy). */
  dbCpuUsPerReq: number;
  /** Global Questions delta per request (every client of the server: noisy). */
  questionsPerReq: number;
  /** Global Handler_read_* delta per request (noisy, see accounting for exact counts). */
  handlerReadPerReq: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
}

/** Exact database work per request of one target, counted at c=1. */
export interface Accounting {
  target: string;
  scenario: string;
  requests: number;
  /** Exact: commands counted by the proxy between service and database. */
  roundTripsPerReq: number;
  /** Handler_read_* per request, from the cleanest of up to 5 attempts. */
  rowsReadPerReq: number;
  /** True when the global Questions delta equalled the proxy's count (nobody else ran). */
  clean: boolean;
  errors: number;
}

/** The service's RSS at start, after warm-up and after the soak. */
export interface SoakReport {
  rssStart: number;
  rssAfterWarm: number;
  rssAfterSoak: number;
  requests: number;
}

/** Size of one gRPC response message, plain and gzipped. */
export interface GzipReport {
  variant: string;
  bytes: number;
  gzipBytes: number;
}

/** Everything this run recorded, in the order it was measured. */
export const recorded: {
  runs: Run[];
  accounting: Accounting[];
  notes: string[];
  soak: SoakReport | undefined;
  gzip: GzipReport[];
} = { runs: [], accounting: [], notes: [], soak: undefined, gzip: [] };
