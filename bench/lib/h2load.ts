import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { setPriority, tmpdir } from "node:os";
import { join } from "node:path";
import { cpuMs } from "./proc.js";

/** One h2load run: POSTs of `body` to `url` over HTTP/2 (h2c). */
export interface H2loadRun {
  url: string;
  headers: Record<string, string>;
  body: Uint8Array;
  /** Connections, one h2load client each. */
  clients: number;
  /** Streams each client keeps open at once: 1 is a closed loop of `clients` callers. */
  streams: number;
  /** Requests per second, all clients together: an open loop. None: as fast as answered. */
  rate?: number;
  durationS: number;
}

/** What came back: latencies (ms) by HTTP status, and the generator's CPU. */
export interface H2loadResult {
  byStatus: Map<number, number[]>;
  durationS: number;
  /** CPU of h2load while it ran, in % of one core. */
  cpuPercent: number;
}

/** Whether h2load (Debian's nghttp2-client) is installed. */
export function h2loadInstalled(): boolean {
  return spawnSync("h2load", ["--version"]).status === 0;
}

/**
 * Runs h2load (nghttp2's HTTP/2 load generator, in C: about a tenth of the
 * CPU per request of a Node client, so that on a 2-core box the open loop at
 * 5x measures the service rather than the generator). Per-request status
 * and time come from its `--log-file`. It runs at a higher CPU priority than
 * the service where allowed (it stands for clients on other machines).
 */
export async function h2load(run: H2loadRun): Promise<H2loadResult> {
  const dir = mkdtempSync(join(tmpdir(), "h2load-"));
  try {
    const bodyFile = join(dir, "body");
    const logFile = join(dir, "log");
    writeFileSync(bodyFile, run.body);
    const args = [
      "-c",
      String(run.clients),
      "-m",
      String(run.streams),
      "-D",
      String(run.durationS),
      "-d",
      bodyFile,
      "--log-file",
      logFile,
      ...Object.entries(run.headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]),
      ...(run.rate ? ["--rps", String(Math.max(1, Math.round(run.rate / run.clients)))] : []),
      run.url,
    ];
    const child = spawn("h2load", args, { stdio: ["ignore", "ignore", "inherit"] });
    try {
      if (child.pid) setPriority(child.pid, -10);
    } catch {}
    let cpu = 0;
    const sampler = setInterval(() => {
      try {
        cpu = cpuMs(child.pid as number);
      } catch {}
    }, 100);
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    clearInterval(sampler);
    if (code !== 0) throw new Error(`h2load exited with ${code}`);
    const byStatus = new Map<number, number[]>();
    for (const line of readFileSync(logFile, "utf8").split("\n")) {
      const [, status, micros] = line.split("\t");
      if (status === undefined || micros === undefined) continue;
      const list = byStatus.get(Number(status)) ?? [];
      list.push(Number(micros) / 1000);
      byStatus.set(Number(status), list);
    }
    for (const list of byStatus.values()) list.sort((a, b) => a - b);
    return { byStatus, durationS: run.durationS, cpuPercent: (cpu / (run.durationS * 1000)) * 100 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
