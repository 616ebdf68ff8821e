/**
 * `npm run bench:profile -- [REST|gRPC|Connect JSON|Connect binary] [seconds]`:
 * runs the service under `node --cpu-prof` on generated data (1,000 sessions),
 * sends list requests (first page, c=16) over one transport, and prints where
 * the service's CPU went: self time by package and by function. The
 * .cpuprofile is kept in bench/results/profiles/ (open it in Chrome DevTools).
 */
import { mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { create, toBinary } from "@bufbuild/protobuf";
import { ListSessionsRequestSchema } from "../gen/practice/v1/practice_session_service_pb.js";
import { signToken } from "../src/auth/tokens.js";
import { freePort, startChild } from "./lib/children.js";
import { generate, MAIN_USER } from "./lib/data.js";
import { bearer, closedLoop, GrpcLoadClient, httpLoad } from "./lib/load.js";
import { cpuMs } from "./lib/proc.js";

const target = process.argv[2] ?? "gRPC";
const seconds = Number(process.argv[3] ?? 5);
const SECRET = "bench-secret-bench-secret-bench-secret-0123";
const PATH = "/practice.v1.PracticeSessionService/ListSessions";
const dir = "bench/results/profiles";
mkdirSync(dir, { recursive: true });

const data = await generate(
  process.env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/",
  [1000],
);
const quizId = data.levelQuiz.get(1000) as string;
const token = await signToken(SECRET, MAIN_USER, { ttlSeconds: 3600 });
const began = Date.now();
let requests = 0;
const svc = await startChild(
  "service",
  "src/main.ts",
  {
    PORT: String(await freePort()),
    METRICS_PORT: "0",
    HOST: "127.0.0.1",
    DATABASE_URL: data.url,
    JWT_SECRET: SECRET,
    LOG_LEVEL: "warn",
    NODE_ENV: "production",
  },
  ["--cpu-prof", "--cpu-prof-dir", dir],
);
try {
  const url = `http://127.0.0.1:${svc.port}`;
  const auth = { authorization: `Bearer ${token}` };
  const bin = Buffer.from(
    toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId })),
  );
  const bound = { durationMs: seconds * 1000 };
  const cpu0 = cpuMs(svc.pid);
  let result: Awaited<ReturnType<typeof closedLoop>>;
  if (target === "gRPC") {
    const client = new GrpcLoadClient(`127.0.0.1:${svc.port}`);
    result = await closedLoop(() => client.call(PATH, bin, bearer(token)), 16, bound, "OK");
    client.close();
  } else {
    const connect = target.startsWith("Connect");
    result = await httpLoad({
      url: connect ? `${url}${PATH}` : `${url}/quizzes/${quizId}/sessions`,
      method: connect ? "POST" : "GET",
      headers: connect
        ? {
            ...auth,
            "content-type": target === "Connect JSON" ? "application/json" : "application/proto",
          }
        : auth,
      body: target === "Connect JSON" ? JSON.stringify({ quizId }) : connect ? bin : undefined,
      connections: 16,
      bound,
      expect: 200,
    });
  }
  requests = result.requests;
  const serverUs = ((cpuMs(svc.pid) - cpu0) * 1000) / requests;
  console.log(
    `${target}: ${result.rps.toFixed(0)} req/s, p50 ${result.p50.toFixed(2)} ms, errors ${result.errors}, server CPU ${serverUs.toFixed(0)} µs/request (profiler on)`,
  );
} finally {
  await svc.stop();
  await data.drop();
}

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const file = readdirSync(dir)
  .filter((f) => f.endsWith(".cpuprofile") && statSync(`${dir}/${f}`).mtimeMs >= began)
  // One profile per thread (tsx's loader runs in a worker): take the biggest.
  .sort((a, b) => statSync(`${dir}/${b}`).size - statSync(`${dir}/${a}`).size)[0];
if (!file) throw new Error("no profile written");
const profile = JSON.parse(readFileSync(`${dir}/${file}`, "utf8")) as {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
};
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => {
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const byFn = new Map<string, number>();
const byPkg = new Map<string, number>();
let total = 0;
for (const [id, us] of self) {
  const n = byId.get(id);
  if (!n) continue;
  const { functionName, url, lineNumber } = n.callFrame;
  if (functionName === "(idle)") continue;
  total += us;
  const short = url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*wt-[^/]+\//, "");
  const key = `${functionName || "(anonymous)"} ${short}:${lineNumber + 1}`;
  byFn.set(key, (byFn.get(key) ?? 0) + us);
  const pkg =
    /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1] ??
    (url.startsWith("node:") ? `node:${url.slice(5).split("/")[0]}` : url ? "ours" : functionName);
  byPkg.set(pkg, (byPkg.get(pkg) ?? 0) + us);
}
// Inclusive time: each sample counts once for every distinct function on its stack.
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const keyOf = (n: Node) => {
  const { functionName, url, lineNumber } = n.callFrame;
  const short = url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*wt-[^/]+\//, "");
  return `${functionName || "(anonymous)"} ${short}:${lineNumber + 1}`;
};
const inclusive = new Map<string, number>();
profile.samples.forEach((id, i) => {
  const seen = new Set<string>();
  if (byId.get(id)?.callFrame.functionName === "(idle)") return;
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const node = byId.get(cur);
    if (!node) break;
    const key = keyOf(node);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
});
const top = (m: Map<string, number>, k: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, k)
    .map(([name, us]) => `  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${name}`)
    .join("\n");
console.log(
  `profile ${dir}/${file}: ${(total / 1000).toFixed(0)} ms busy (start-up included), ${(total / requests).toFixed(0)} µs per request`,
);
console.log(`by package:\n${top(byPkg, 15)}`);
console.log(`by function (self):\n${top(byFn, 30)}`);
console.log(`by function (inclusive):\n${top(inclusive, 60)}`);
