/**
 * The gzip phase: a 100-session gRPC list page from two Connect-only servers,
 * one with the shipped compression threshold (64 KiB: off for such a page)
 * and one at 1 KiB, to say what compressing list pages would cost.
 */

import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { ListSessionsRequestSchema } from "../../gen/practice/v1/practice_session_service_pb.js";
import type { Child } from "../lib/children.js";
import type { BenchData } from "../lib/data.js";
import { bearer, GrpcLoadClient } from "../lib/load.js";
import { sweep } from "./phases.js";
import { recorded } from "./records.js";
import { startConnectOnly } from "./services.js";
import { LIST_PATH, MAIN_LEVEL } from "./settings.js";
import { callTarget } from "./targets.js";

/** The servers compared, by name, and their `compressMinBytes`. */
const VARIANTS: [string, number][] = [
  ["gzip off (compressMinBytes 64 KiB, as shipped)", 65_536],
  ["gzip on (compressMinBytes 1 KiB)", 1024],
];

/** Measures both servers at c=16; they join `children` so a failure still stops them. */
export async function gzipPhase(data: BenchData, token: string, children: Child[]): Promise<void> {
  const quizId = data.levelQuiz.get(MAIN_LEVEL) as string;
  const bin = Buffer.from(
    toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId, limit: 100 })),
  );
  const servers: { name: string; child: Child; client: GrpcLoadClient }[] = [];
  for (const [name, min] of VARIANTS) {
    const child = await startConnectOnly(name, data.url, min);
    children.push(child);
    servers.push({ name, child, client: new GrpcLoadClient(`127.0.0.1:${child.port}`) });
  }
  const md = bearer(token);
  const first = servers[0] as (typeof servers)[number];
  const bytes = await first.client.callRaw(LIST_PATH, bin, md);
  recorded.gzip.push({
    variant: "limit=100 page",
    bytes: bytes.length,
    gzipBytes: gzipSync(bytes).length,
  });
  const targets = servers.map((x) =>
    callTarget(
      `gRPC ${x.name}`,
      () => x.child.pid,
      () => x.client.call(LIST_PATH, bin, md),
      "OK",
    ),
  );
  await sweep("gzip", `${MAIN_LEVEL} first page, limit 100`, targets, [16]);
  for (const x of servers) x.client.close();
}
