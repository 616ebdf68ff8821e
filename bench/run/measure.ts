/**
 * One timed run of one target with its costs: the server's, the harness's
 * and MariaDB's CPU, the global status counters and RSS around the load.
 */

import { execFileSync } from "node:child_process";
import { StatusReader } from "../lib/db-status.js";
import type { Bound } from "../lib/load.js";
import { cpuMs, rssMiB } from "../lib/proc.js";
import { type Run, recorded } from "./records.js";
import { log } from "./settings.js";
import type { Target } from "./targets.js";

// The database's counters and process, read around every run: opened once by
// openMeter, so that every phase reads the same connection.
let status: StatusReader | undefined;
let dbPid = 0;

/** Connects the status reader and finds MariaDB's pid (0, no DB CPU, when not local). */
export async function openMeter(serverUrl: string): Promise<void> {
  status = await StatusReader.open(serverUrl);
  try {
    dbPid = Number(execFileSync("pidof", ["mariadbd"]).toString().trim().split(" ")[0]) || 0;
  } catch {
    dbPid = 0;
  }
}

/** The status reader opened by {@link openMeter}. */
export function counters(): StatusReader {
  if (!status) throw new Error("openMeter was not called");
  return status;
}

/** Closes the status reader's connection. */
export async function closeMeter(): Promise<void> {
  await status?.close();
  status = undefined;
}

/** Runs `target` once (closed loop at `concurrency`, or open loop at `rate`), records and logs it. */
export async function measure(
  section: string,
  scenario: string,
  target: Target,
  concurrency: number,
  bound: Bound,
  round: number,
  rate?: number,
): Promise<Run> {
  const status = counters();
  const pid = target.pid();
  const rssBefore = rssMiB(pid);
  const before = await status.read();
  const cpu0 = cpuMs(pid);
  const me0 = cpuMs(process.pid);
  const db0 = dbPid ? cpuMs(dbPid) : 0;
  const load = await target.run(concurrency, bound, rate);
  const cpu1 = cpuMs(pid);
  const me1 = cpuMs(process.pid);
  const db1 = dbPid ? cpuMs(dbPid) : 0;
  const after = await status.read();
  const n = Math.max(1, load.requests);
  const run: Run = {
    section,
    target: target.name,
    scenario,
    concurrency: rate === undefined ? concurrency : `open ${Math.round(rate)}/s`,
    round,
    load,
    cpuUsPerReq: ((cpu1 - cpu0) * 1000) / n,
    clientCpuUsPerReq: ((me1 - me0) * 1000) / n,
    dbCpuUsPerReq: ((db1 - db0) * 1000) / n,
    // The reader's own SHOW STATUS counts one question.
    questionsPerReq: (after.questions - before.questions - 1) / n,
    handlerReadPerReq: (after.handlerRead - before.handlerRead) / n,
    rssBeforeMiB: rssBefore,
    rssAfterMiB: rssMiB(pid),
  };
  recorded.runs.push(run);
  const errs = load.errors ? ` ERRORS ${load.errors} ${JSON.stringify(load.statuses)}` : "";
  log(
    `${section} ${scenario} ${target.name} c=${run.concurrency} r${round}: ${load.rps.toFixed(0)} req/s p50 ${load.p50.toFixed(2)} p99 ${load.p99.toFixed(2)} ms cpu ${run.cpuUsPerReq.toFixed(0)} µs${errs}`,
  );
  return run;
}
