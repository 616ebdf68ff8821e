/**
 * Sums a .cpuprofile's self time by package (or file) and by function, per
 * call if given the calls it served. Profile the servers of a bench run with
 *   BENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=bench/results/profiles" npm run bench:throughput
 * (each server writes its profile when stopped), then
 *   node dist/bench/profile.js bench/results/profiles/CPU.….cpuprofile [CALLS]
 * Self time of native calls (writev, writeBuffer) includes their syscall.
 */
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
const [file, calls] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file ?? "", "utf8")) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
};
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const byPackage = new Map<string, number>();
const byFunction = new Map<string, number>();
const add = (m: Map<string, number>, k: string, us: number) => m.set(k, (m.get(k) ?? 0) + us);
let total = 0;
profile.samples.forEach((id, i) => {
  const us = profile.timeDeltas[i] ?? 0;
  const { functionName, url, lineNumber } = (byId.get(id) as Node).callFrame;
  const path = url.replace(/^file:\/\//, "").replace(/.*node_modules\//, "");
  const pkg = url.includes("node_modules/")
    ? path
        .split("/")
        .slice(0, path.startsWith("@") ? 2 : 1)
        .join("/")
    : path || functionName;
  add(byPackage, pkg, us);
  add(byFunction, `${functionName || "(anonymous)"} ${path}:${lineNumber + 1}`, us);
  total += us;
});
const per = Number(calls ?? 0);
const unit = per ? "µs/call" : "ms";
const fmt = (us: number) => (per ? us / per : us / 1000).toFixed(1).padStart(9);
const top = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `${fmt(us)} ${((100 * us) / total).toFixed(1).padStart(5)}%  ${k}`);
console.log(
  [
    `total ${fmt(total)} ${unit}`,
    "-- by package or file",
    ...top(byPackage, 20),
    "-- by function",
    ...top(byFunction, 30),
  ].join("\n"),
);
