import { readFileSync } from "node:fs";
import type { DescService } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import { fileService } from "../support/in-process.js";

/**
 * The checklist of docs/development.md ("Adding an operation") kept honest: every RPC of the
 * proto has a row in docs/api.md's Operations table, and that row's REST path is a route of the
 * app, under "/" and "/api". Forgetting the route or the row fails here.
 */
const services: DescService[] = [PracticeSessionService, QuizService];
const rpcs = services.flatMap((s) => s.methods.map((m) => `${s.name}/${m.name}`)).sort();

function operationsTable(): Map<string, { method: string; path: string }> {
  const doc = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
  const section = doc.split(/^## Operations$/m)[1]?.split(/^## /m)[0] ?? "";
  const rows = new Map<string, { method: string; path: string }>();
  for (const line of section.split("\n")) {
    const rpc = /^\| `(\w+\/\w+)` \| `(GET|POST|PUT|PATCH|DELETE) ([^`?]+)/.exec(line);
    if (rpc?.[1] && rpc[2] && rpc[3]) rows.set(rpc[1], { method: rpc[2], path: rpc[3] });
  }
  return rows;
}

const svc = await fileService();

describe("adding an operation", () => {
  const table = operationsTable();

  it("every RPC of the proto has a row in docs/api.md's Operations table, and no row names another", () => {
    expect([...table.keys()].sort()).toEqual(rpcs);
  });

  it.each(rpcs)("%s: its REST path is a route, under / and /api", (rpc) => {
    const row = table.get(rpc);
    expect(row, `no row for ${rpc} in docs/api.md`).toBeDefined();
    if (!row) return;
    // Fastify's own path syntax: {quiz_id} → :quiz_id.
    const url = row.path.replace(/\{(\w+)\}/g, ":$1");
    for (const prefix of ["", "/api"]) {
      expect(
        svc.app.hasRoute({ method: row.method, url: `${prefix}${url}` }),
        `${row.method} ${prefix}${url}`,
      ).toBe(true);
    }
  });
});
