/**
 * A load generator in a process of its own (so that its CPU is not the
 * service's event loop): `node --import tsx test/support/open-loop.ts` with
 * a JSON argument. "saturate": `workers` callers in a closed loop for
 * `seconds` after a second of warm-up; prints `{ served, cpuMs }`. "open": `rate` calls a second for
 * `seconds`, every tenth a REST list, the rest gRPC lists, none waited for
 * before the next; prints `{ tally, cpuMs }` (the tally of outcomes, its own CPU time).
 */
import { connect } from "node:http2";

interface Args {
  mode: "saturate" | "open";
  baseUrl: string;
  quizId: string;
  /** The callers' tokens, taken in turn: overload from many users, as it comes. */
  tokens: string[];
  /** A gRPC ListSessions request frame, base64. */
  message: string;
  seconds: number;
  workers?: number;
  rate?: number;
}

const args = JSON.parse(process.argv[2] ?? "{}") as Args;
const message = Buffer.from(args.message, "base64");
const sessions = Array.from({ length: 20 }, () => connect(args.baseUrl));
for (const s of sessions) s.on("error", () => {});
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return Math.round((user + system) / 1000);
};
const tokenOf = (i: number) => args.tokens[i % args.tokens.length] ?? "";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function grpcList(i: number): Promise<string> {
  return new Promise((resolve) => {
    const session = sessions[i % sessions.length];
    if (session === undefined || session.destroyed) return resolve("grpc gone");
    const stream = session.request({
      ":method": "POST",
      ":path": "/practice.v1.PracticeSessionService/ListSessions",
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${tokenOf(i)}`,
    });
    let status: string | undefined;
    stream.on("response", (h) => {
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
      // gRPC over HTTP: a 503 is `unavailable` (a refusal before the request is read).
      else if (h[":status"] === 503) status = "14";
    });
    stream.on("trailers", (t) => {
      status = String(t["grpc-status"]);
    });
    stream.on("data", () => {});
    stream.on("error", () => {});
    stream.on("close", () => resolve(`grpc ${status ?? `reset ${stream.rstCode}`}`));
    stream.end(message);
  });
}

async function restList(i: number): Promise<string> {
  try {
    const res = await fetch(`${args.baseUrl}/quizzes/${args.quizId}/sessions`, {
      headers: { authorization: `Bearer ${tokenOf(i)}` },
    });
    await res.arrayBuffer();
    return `rest ${res.status} ${res.headers.get("retry-after") ?? "-"}`;
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    return `rest error ${cause?.code ?? "unknown"}`;
  }
}

if (args.mode === "saturate") {
  let served = 0;
  // One second of warm-up (connections, JIT) before counting.
  const counting = performance.now() + 1000;
  const until = counting + args.seconds * 1000;
  await Promise.all(
    Array.from({ length: args.workers ?? 40 }, async (_, w) => {
      while (performance.now() < until) {
        const ok = (await grpcList(w)) === "grpc 0";
        if (ok && performance.now() >= counting) served++;
      }
    }),
  );
  console.log(JSON.stringify({ served, cpuMs: cpuMs() }));
} else {
  const pending: Promise<string>[] = [];
  const start = performance.now();
  const end = start + args.seconds * 1000;
  let sent = 0;
  while (performance.now() < end) {
    const due = Math.round(((args.rate ?? 100) * (performance.now() - start)) / 1000);
    while (sent < due) {
      sent++;
      pending.push(sent % 10 === 0 ? restList(sent) : grpcList(sent));
    }
    await sleep(5);
  }
  const tally: Record<string, number> = {};
  for (const outcome of await Promise.all(pending)) tally[outcome] = (tally[outcome] ?? 0) + 1;
  // Its own CPU: on a small box the load generator competes with the service.
  console.log(JSON.stringify({ tally, cpuMs: cpuMs() }));
}
for (const s of sessions) s.close();
