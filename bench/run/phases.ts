/**
 * The timed phases against the service and the bare baseline: GetQuiz, the
 * list concurrency sweep, list latency by history size, start (resume and
 * create), the memory soak and the open loop. Each appends its runs to
 * `recorded`; the order of phases is the order of {@link timedPhases}' calls.
 */

import type { Pool } from "mysql2/promise";
import { signToken } from "../../src/auth/tokens.js";
import type { BenchData } from "../lib/data.js";
import { httpLoad } from "../lib/load.js";
import { median } from "../lib/stats.js";
import type { ServiceSql } from "./capture.js";
import { measure } from "./measure.js";
import { recorded } from "./records.js";
import { listTargets, startTargets } from "./requests.js";
import {
  CREATES,
  DURATION_MS,
  LEVELS,
  MAIN_LEVEL,
  ROUNDS,
  SECRET,
  SOAK_REQUESTS,
} from "./settings.js";
import type { Servers, Target } from "./targets.js";

/**
 * Warms every target at c=16, then measures each round of each concurrency,
 * targets interleaved so that drift on the machine hits them alike. Only c=16
 * is repeated after the first round: the other levels are a shape, not a ratio.
 */
export async function sweep(
  section: string,
  scenario: string,
  targets: Target[],
  concurrencies: number[],
): Promise<void> {
  for (const t of targets) await t.run(16, { durationMs: Math.min(2000, DURATION_MS) });
  for (let round = 1; round <= ROUNDS; round++) {
    for (const c of concurrencies) {
      if (c !== 16 && round > 1) continue;
      for (const t of targets) {
        await measure(section, scenario, t, c, { durationMs: DURATION_MS }, round);
      }
    }
  }
}

/** What the list phases need: servers, a pool for the ceiling, the token and the SQL. */
export interface ListContext {
  s: () => Servers;
  rawPool: Pool;
  data: BenchData;
  mainToken: string;
  sql: ServiceSql;
}

/** The list targets of one level and page. */
export function listAt(ctx: ListContext, level: number, deep: boolean): Target[] {
  const listSql = ctx.sql.listSql.get(`${level}/${deep}`);
  if (!listSql) throw new Error(`no list statement captured for ${level}/${deep}`);
  return listTargets(ctx.s, ctx.rawPool, ctx.mainToken, ctx.data, level, deep, listSql);
}

/** List latency by history size, first page and deep cursor, c=1, ceiling + REST + gRPC. */
export async function historyPhase(ctx: ListContext): Promise<void> {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const level of LEVELS) {
      for (const deep of [false, true]) {
        const scenario = `${level} ${deep ? "deep cursor" : "first page"}`;
        const all = listAt(ctx, level, deep);
        for (const t of all.filter((x) => ["raw mysql2", "REST", "gRPC"].includes(x.name))) {
          await measure(
            "history",
            scenario,
            t,
            1,
            { durationMs: Math.max(1000, DURATION_MS / 2) },
            round,
          );
        }
      }
    }
  }
}

/** Row keys of the create runs, in the order of {@link startTargets}. */
const CREATE_KEYS = ["raw", "bare", "bare-cached", "rest", "cjson", "cbin", "grpc"];

/**
 * StartSession creating a session for a new user per request: `CREATES`
 * requests per target and round, tokens signed beforehand so signing is not
 * counted.
 */
export async function createPhase(
  s: () => Servers,
  data: BenchData,
  rawPool: Pool,
  sql: ServiceSql,
): Promise<void> {
  const { svc, bare } = s();
  for (let round = 1; round <= ROUNDS; round++) {
    const prefix = `bench-create-r${round}`;
    for (const [k, name] of CREATE_KEYS.entries()) {
      const tokens = await Promise.all(
        Array.from({ length: CREATES }, (_, i) =>
          signToken(SECRET, `${prefix}-${name}-${i}`, { ttlSeconds: 86_400 }),
        ),
      );
      const t = startTargets(
        s,
        (i) => tokens[i] as string,
        data.startQuiz,
        true,
        sql.rawCreate(rawPool, `${prefix}-${name}`),
      )[k] as Target;
      // Our service and the cached baseline have seen each token once already,
      // as they would have for a user's earlier calls: warm their token caches
      // with a request that stops before the database (quiz id "x" is not an id).
      if (name !== "raw" && name !== "bare") {
        const child = name === "bare-cached" ? bare : svc;
        await httpLoad({
          url: `http://127.0.0.1:${child.port}${name === "bare-cached" ? "/cached" : ""}/quizzes/x/sessions`,
          method: "GET",
          headers: {},
          headersFor: (i) => ({ authorization: `Bearer ${tokens[i]}` }),
          connections: 16,
          bound: { amount: CREATES },
          expect: 404,
        });
      }
      await measure("start", "create", t, 16, { amount: CREATES }, round);
    }
  }
}

/**
 * Soak: the service's RSS after many REST list requests against after
 * warm-up, then the open loop (after the soak, since it may overload).
 */
export async function soakAndOpenPhase(
  main: Target[],
  rssStart: number,
  rssAfterWarm: number,
): Promise<void> {
  const rest = main.find((x) => x.name === "REST") as Target;
  const soak = await measure(
    "soak",
    `${MAIN_LEVEL} first page`,
    rest,
    16,
    { amount: SOAK_REQUESTS },
    1,
  );
  recorded.soak = {
    rssStart,
    rssAfterWarm,
    rssAfterSoak: soak.rssAfterMiB,
    requests: SOAK_REQUESTS,
  };
  for (const name of ["REST", "gRPC"]) {
    // 70% of the median closed-loop rate at c=16 (the best single run overshoots on a noisy box).
    const typical = median(
      recorded.runs
        .filter((r) => r.section === "list" && r.target === name && r.concurrency === 16)
        .map((r) => r.load.rps),
    );
    const rate = Math.round(typical * 0.7);
    const t = main.find((x) => x.name === name) as Target;
    await measure(
      "open",
      `${MAIN_LEVEL} first page`,
      t,
      16,
      { durationMs: 2 * DURATION_MS },
      1,
      rate,
    );
  }
}
