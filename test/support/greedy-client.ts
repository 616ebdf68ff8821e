/**
 * One user's many loops, in a process of its own (so its CPU is not the
 * service's): `tsx test/support/greedy-client.ts BASE_URL TOKEN QUIZ LOOPS MS`
 * runs LOOPS loops, half REST and half gRPC (grpc-js), each listing QUIZ's
 * sessions one call at a time for MS ms, ignoring Retry-After; prints one
 * JSON line: the count of each outcome and each refusal's time.
 */
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { createGrpcClient } from "./grpc-client.js";

const [baseUrl = "", token = "", quizId = "", loops = "300", ms = "6000"] = process.argv.slice(2);
const grpc = createGrpcClient(PracticeSessionService, new URL(baseUrl).host);
const metadata = { authorization: `Bearer ${token}` };
const GRPC_CODES: Record<number, string> = {
  4: "deadline_exceeded",
  8: "resource_exhausted",
  14: "unavailable",
};

const codes: Record<string, number> = {};
const refusalMs: number[] = [];
const until = performance.now() + Number(ms);

async function once(rest: boolean): Promise<void> {
  const t0 = performance.now();
  let code: string;
  try {
    if (rest) {
      const res = await fetch(`${baseUrl}/quizzes/${quizId}/sessions`, {
        headers: { authorization: metadata.authorization },
      });
      await res.arrayBuffer();
      code =
        res.status === 200 ? "ok" : res.status === 429 ? "resource_exhausted" : String(res.status);
    } else {
      await grpc.listSessions({ quizId }, metadata);
      code = "ok";
    }
  } catch (err) {
    const n = (err as { code?: number }).code;
    code = (typeof n === "number" && GRPC_CODES[n]) || String(n);
  }
  codes[code] = (codes[code] ?? 0) + 1;
  if (code === "resource_exhausted") refusalMs.push(performance.now() - t0);
}

await Promise.all(
  Array.from({ length: Number(loops) }, async (_, i) => {
    while (performance.now() < until) await once(i % 2 === 0);
  }),
);
console.log(JSON.stringify({ codes, refusalMs }));
process.exit(0);
