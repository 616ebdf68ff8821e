import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

/** Linux clock ticks per second for /proc/PID/stat (getconf CLK_TCK; 100 on Linux). */
const CLK_TCK = 100;

/** User + system CPU time of a process (ms), from /proc/PID/stat; self via process.cpuUsage. */
export function cpuMs(pid: number): number {
  if (pid === process.pid) {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / CLK_TCK;
}

/**
 * BENCH_BUSY_CORE=1: another process spinning on one core for the whole run,
 * as a neighbour on a shared machine would. Returns how to stop it.
 */
export function busyCore(): () => void {
  if (process.env.BENCH_BUSY_CORE !== "1") return () => {};
  const child = spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" });
  return () => child.kill("SIGKILL");
}
