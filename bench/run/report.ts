/**
 * The report: Markdown tables of medians (stdout and bench/results/<time>.md)
 * and every raw record (bench/results/<time>.json), from what the phases
 * recorded.
 */

import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import type { BenchData } from "../lib/data.js";
import { median } from "../lib/stats.js";
import { type Run, recorded } from "./records.js";
import {
  BIG,
  CONCURRENCIES,
  CREATES,
  DURATION_MS,
  LEVELS,
  log,
  MAIN_LEVEL,
  ROUNDS,
} from "./settings.js";

const { runs, accounting, notes, gzip: gzipReport } = recorded;

/** The runs of one cell of a table: every round of one target at one concurrency. */
function cell(section: string, scenario: string, target: string, c: number | string): Run[] {
  return runs.filter(
    (r) =>
      r.section === section &&
      r.scenario === scenario &&
      r.target === target &&
      r.concurrency === c,
  );
}

/** The median of `f` over the rounds of one cell of a table. */
function med(
  section: string,
  scenario: string,
  target: string,
  c: number | string,
  f: (r: Run) => number,
): number {
  return median(cell(section, scenario, target, c).map(f));
}

/** A number for a table; "n/a" where a cell or its baseline was not measured. */
function fmt(x: number, digits = 0): string {
  return Number.isFinite(x) ? x.toFixed(digits) : "n/a";
}

/** Writes the Markdown and JSON results and prints the Markdown on stdout. */
export function writeResults(data: BenchData): void {
  const lines: string[] = [];
  const out = (s = "") => lines.push(s);
  const host = `${process.version}, ${execFileSync("nproc").toString().trim()} cores`;
  out(`# Results ${new Date().toISOString()}`);
  out();
  out(
    `Node ${host}; ${data.totalSessions} sessions generated in ${data.generateSeconds.toFixed(1)} s; levels ${LEVELS.join(", ")}; ${DURATION_MS} ms per run; medians of ${ROUNDS} rounds where repeated.`,
  );
  out();
  const errored = runs.filter((r) => r.load.errors > 0);
  out(
    errored.length === 0
      ? "Every response had the expected status."
      : `**${errored.length} runs had errors** (see the tables).`,
  );

  const table = (
    section: string,
    scenario: string,
    cs: (number | string)[],
    baseline: string[],
  ) => {
    const targets = [
      ...new Set(
        runs.filter((r) => r.section === section && r.scenario === scenario).map((r) => r.target),
      ),
    ];
    out();
    const ratioHead = baseline.map((b) => ` × ${b} |`).join("");
    out(
      `| target | c | req/s | p50 ms | p99 ms |${ratioHead} server CPU µs/req | client CPU µs/req | DB CPU µs/req | Questions/req (global) | errors |`,
    );
    out(
      `|---|---:|---:|---:|---:|${baseline.map(() => "---:|").join("")}---:|---:|---:|---:|---:|`,
    );
    for (const c of cs) {
      for (const t of targets) {
        const rps = med(section, scenario, t, c, (r) => r.load.rps);
        if (!Number.isFinite(rps)) continue;
        const ratios = baseline.map((b) =>
          fmt(rps / med(section, scenario, b, c, (r) => r.load.rps), 2),
        );
        const errs = cell(section, scenario, t, c).reduce((n, r) => n + r.load.errors, 0);
        out(
          `| ${t} | ${c} | ${fmt(rps)} | ${fmt(
            med(section, scenario, t, c, (r) => r.load.p50),
            2,
          )} | ${fmt(
            med(section, scenario, t, c, (r) => r.load.p99),
            2,
          )} |${ratios.map((x) => ` ${x} |`).join("")} ${fmt(med(section, scenario, t, c, (r) => r.cpuUsPerReq))} | ${fmt(med(section, scenario, t, c, (r) => r.clientCpuUsPerReq))} | ${fmt(med(section, scenario, t, c, (r) => r.dbCpuUsPerReq))} | ${fmt(
            med(section, scenario, t, c, (r) => r.questionsPerReq),
            2,
          )} | ${errs} |`,
        );
      }
    }
  };

  out();
  out(`## List, ${MAIN_LEVEL} sessions, first page (limit 20)`);
  table("list", `${MAIN_LEVEL} first page`, CONCURRENCIES, [
    "raw mysql2",
    "bare Fastify",
    "bare Fastify + token cache",
  ]);
  out();
  out("## List p50 by history size (c=1)");
  out();
  out(
    `| target | page | ${LEVELS.map((l) => `p50 @ ${l}`).join(" | ")} | p50 @ ${BIG} / p50 @ 10 |`,
  );
  out(`|---|---|${LEVELS.map(() => "---:").join("|")}|---:|`);
  for (const t of ["raw mysql2", "REST", "gRPC"]) {
    for (const page of ["first page", "deep cursor"]) {
      const p = LEVELS.map((l) => med("history", `${l} ${page}`, t, 1, (r) => r.load.p50));
      out(
        `| ${t} | ${page} | ${p.map((x) => fmt(x, 3)).join(" | ")} | ${fmt((p.at(-1) as number) / (p[0] as number), 2)} |`,
      );
    }
  }
  out();
  out("## GetQuiz, a quiz of 10 questions");
  table("quiz", "10 questions", [1, 16], ["raw mysql2"]);
  out();
  out("## Start or resume (c=16)");
  out();
  out("### Resume (an in-progress session with 5 answers)");
  table("start", "resume", [16], ["raw mysql2", "bare Fastify"]);
  out();
  out(`### Create (a new user per request, ${CREATES} requests per run)`);
  table("start", "create", [16], ["raw mysql2", "bare Fastify"]);
  out();
  out("## Round trips and rows read per request (exact, through a counting proxy, c=1)");
  out();
  out(
    "| scenario | target | round trips/req | rows read/req (Handler_read_*) | counters clean | errors |",
  );
  out("|---|---|---:|---:|---|---:|");
  for (const a of accounting) {
    out(
      `| ${a.scenario} | ${a.target} | ${fmt(a.roundTripsPerReq, 2)} | ${fmt(a.rowsReadPerReq, 1)} | ${a.clean ? "yes" : "no (other clients)"} | ${a.errors} |`,
    );
  }
  out();
  out("## Open loop at 70% of the median closed-loop rate at c=16");
  out();
  out("| target | rate | achieved req/s | p50 ms | p99 ms | p99/p50 | errors |");
  out("|---|---:|---:|---:|---:|---:|---:|");
  for (const r of runs.filter((x) => x.section === "open")) {
    out(
      `| ${r.target} | ${r.concurrency} | ${fmt(r.load.rps)} | ${fmt(r.load.p50, 2)} | ${fmt(r.load.p99, 2)} | ${fmt(r.load.p99 / r.load.p50, 2)} | ${r.load.errors} |`,
    );
  }
  out();
  out("## gRPC list pages with and without gzip (limit 100)");
  for (const g of gzipReport) out(`\nResponse message: ${g.bytes} bytes, ${g.gzipBytes} gzipped.`);
  table("gzip", `${MAIN_LEVEL} first page, limit 100`, [16], []);
  const soakReport = recorded.soak;
  if (soakReport) {
    out();
    out("## Memory (service RSS, MiB)");
    out();
    out(
      `At start ${fmt(soakReport.rssStart, 1)}; after warm-up and the list matrix ${fmt(soakReport.rssAfterWarm, 1)}; after ${soakReport.requests} more REST list requests ${fmt(soakReport.rssAfterSoak, 1)} (${fmt((soakReport.rssAfterSoak / soakReport.rssAfterWarm - 1) * 100, 1)}%).`,
    );
  }
  for (const n of notes) out(`\n${n}`);
  const md = lines.join("\n");
  mkdirSync("bench/results", { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  writeFileSync(
    `bench/results/${stamp}.json`,
    JSON.stringify({ levels: LEVELS, runs, accounting, soakReport, gzipReport }, null, 1),
  );
  writeFileSync(`bench/results/${stamp}.md`, `${md}\n`);
  console.log(md);
  log(`wrote bench/results/${stamp}.md and .json`);
}
