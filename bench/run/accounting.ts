/**
 * The accounting phase: exact round trips and rows read per request of every
 * target, at c=1, with the service and the baseline talking to MariaDB
 * through a proxy that counts commands.
 */

import { createHmac } from "node:crypto";
import { createPool } from "mysql2/promise";
import { CommandCountingProxy } from "../lib/count-proxy.js";
import type { BenchData } from "../lib/data.js";
import { GrpcLoadClient } from "../lib/load.js";
import type { ServiceSql } from "./capture.js";
import { counters } from "./measure.js";
import { type Accounting, recorded } from "./records.js";
import { listTargets, quizTargets, startTargets } from "./requests.js";
import { startBare, startService } from "./services.js";
import { LEVELS, log, MAIN_LEVEL, ONLY, QUICK, SECRET } from "./settings.js";
import { connectClients, type Target } from "./targets.js";

/** The targets of the create accounting, by their index in {@link startTargets}. */
const CREATE_NAMES = [
  "raw mysql2",
  "bare Fastify",
  "bare Fastify + token cache",
  "REST",
  "Connect JSON",
  "Connect binary",
  "gRPC",
];

/** Counts every target's database work and appends it to `recorded.accounting`. */
export async function accountingPhase(
  data: BenchData,
  mainToken: string,
  resumeToken: string,
  sql: ServiceSql,
): Promise<void> {
  const status = counters();
  const url = new URL(data.url);
  const proxy = new CommandCountingProxy(url.hostname, Number(url.port || 3306));
  await proxy.start();
  url.host = `127.0.0.1:${proxy.port}`;
  const proxied = url.toString();
  const svc = await startService("service (counted)", proxied);
  const bare = await startBare("bare (counted)", proxied);
  const grpc = new GrpcLoadClient(`127.0.0.1:${svc.port}`);
  const rawPool = createPool({ uri: proxied, connectionLimit: 2, timezone: "Z" });
  const s = () => ({ svc, bare, grpc, ...connectClients(svc.port) });
  const K = QUICK ? 50 : 200;
  try {
    // Calibrate: what reading the counters costs by itself.
    let qOff = Number.POSITIVE_INFINITY;
    let hOff = Number.POSITIVE_INFINITY;
    for (let i = 0; i < 5; i++) {
      const a = await status.read();
      const b = await status.read();
      qOff = Math.min(qOff, b.questions - a.questions);
      hOff = Math.min(hOff, b.handlerRead - a.handlerRead);
    }
    // `next` gives the target of each attempt's warm-up and count: the same
    // one, or a fresh one where a request must not repeat (a create's user).
    const account = async (scenario: string, name: string, n: number, next: () => Target) => {
      let best: Accounting | undefined;
      for (let attempt = 0; attempt < 5; attempt++) {
        await next().run(1, { amount: 3 }); // connections and statement cache warm
        const t2 = next();
        proxy.commands = 0;
        const a = await status.read();
        const load = await t2.run(1, { amount: n });
        const b = await status.read();
        const commands = proxy.commands;
        const clean = b.questions - a.questions - qOff === commands;
        const rows = (b.handlerRead - a.handlerRead - hOff) / load.requests;
        const rec: Accounting = {
          target: name,
          scenario,
          requests: load.requests,
          roundTripsPerReq: commands / load.requests,
          rowsReadPerReq: rows,
          clean,
          errors: load.errors,
        };
        if (!best || (clean && !best.clean) || (clean === best.clean && rows < best.rowsReadPerReq))
          best = rec;
        if (clean) break;
      }
      recorded.accounting.push(best as Accounting);
      log(
        `accounting ${scenario} ${name}: ${best?.roundTripsPerReq.toFixed(2)} round trips, ${best?.rowsReadPerReq.toFixed(1)} rows read${best?.clean ? "" : " (other clients were active)"}`,
      );
    };
    const same = (t: Target) => () => t;
    for (const t of quizTargets(s, rawPool, mainToken, data.startQuiz, sql.quizSql)) {
      await account("get quiz", t.name, K, same(t));
    }
    if (ONLY === "quiz") return;
    for (const level of LEVELS) {
      for (const deep of [false, true]) {
        const listSql = sql.listSql.get(`${level}/${deep}`);
        if (!listSql) throw new Error(`no list statement captured for ${level}/${deep}`);
        const ts = listTargets(s, rawPool, mainToken, data, level, deep, listSql);
        // Away from the main level, the ceiling and two transports say how cost grows.
        const names = level === MAIN_LEVEL ? ts.map((t) => t.name) : ["raw mysql2", "REST", "gRPC"];
        for (const t of ts.filter((x) => names.includes(x.name)))
          await account(`list ${level} ${deep ? "deep cursor" : "first page"}`, t.name, K, same(t));
      }
    }
    const resume = startTargets(
      s,
      () => resumeToken,
      data.startQuiz,
      false,
      sql.rawResume(rawPool),
    );
    for (const t of resume) await account("start resume", t.name, K, same(t));
    let gen = 0;
    for (const [k, name] of CREATE_NAMES.entries()) {
      const fresh = () => {
        const prefix = `bench-acct-${k}-${gen++}`;
        const tokens = new Map<number, string>();
        // Tokens are signed on first use; signing is client-side work.
        const tokenFor = (i: number) => {
          let tok = tokens.get(i);
          if (tok === undefined) {
            tok = signTokenSync(`${prefix}-${i}`);
            tokens.set(i, tok);
          }
          return tok;
        };
        return startTargets(s, tokenFor, data.startQuiz, true, sql.rawCreate(rawPool, prefix))[
          k
        ] as Target;
      };
      await account("start create", name, K, fresh);
    }
  } finally {
    grpc.close();
    await svc.stop();
    await bare.stop();
    await rawPool.end();
    await proxy.stop();
  }
}

/** An HS256 token signed synchronously with node:crypto (jose verifies it like its own). */
function signTokenSync(sub: string): string {
  const now = Math.floor(Date.now() / 1000);
  const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
  const head = `${enc({ alg: "HS256", typ: "JWT" })}.${enc({ sub, iat: now, exp: now + 86_400 })}`;
  return `${head}.${createHmac("sha256", SECRET).update(head).digest("base64url")}`;
}
