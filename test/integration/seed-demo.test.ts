import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { sql } from "kysely";
import { afterAll, expect, it } from "vitest";
import { dropDatabase, openDatabase } from "../../src/db/connect.js";
import { newTestDatabaseUrl, testStore } from "../support/database.js";
import { defaultDatabaseLimits } from "../support/settings.js";

const repo = resolve(import.meta.dirname, "../..");
const tsx = pathToFileURL(join(repo, "node_modules/tsx/dist/loader.mjs")).href;
const temp = mkdtempSync(join(tmpdir(), "seed-demo-"));
const dropAfter: string[] = [];

afterAll(async () => {
  for (const url of dropAfter) await dropDatabase(url);
  rmSync(temp, { recursive: true, force: true });
});

/** `npm run seed:demo`'s command, run in `cwd` with DATABASE_URL = `url` (unset if undefined). */
function seed(cwd: string, url: string | undefined, extra: NodeJS.ProcessEnv = {}) {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.DATABASE_URL;
  if (url !== undefined) env.DATABASE_URL = url;
  return new Promise<{ code: number | null; out: string }>((done) => {
    const child = spawn(process.execPath, ["--import", tsx, join(repo, "scripts/seed-demo.ts")], {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
    });
    child.stderr.on("data", (d) => {
      out += d;
    });
    child.on("exit", (code) => done({ code, out }));
  });
}

async function contentCounts(url: string) {
  const { db, close } = openDatabase({
    url,
    poolSize: 1,
    connectTimeoutMs: 3000,
    limits: defaultDatabaseLimits(),
  });
  try {
    const count = async (table: string) =>
      Number(
        (await sql<{ n: number }>`SELECT COUNT(*) AS n FROM ${sql.table(table)}`.execute(db))
          .rows[0]?.n,
      );
    return [await count("study_guides"), await count("quizzes"), await count("questions")];
  } finally {
    await close();
  }
}

it("says which store it wrote to, and a second run adds nothing", async () => {
  let url: string;
  let store: RegExp;
  if (testStore() === "mysql") {
    url = newTestDatabaseUrl("mysql");
    const server = new URL(url);
    dropAfter.push(url);
    store = new RegExp(`^Store: MySQL ${server.host}${server.pathname}: `);
  } else {
    const file = join(temp, "explicit.db");
    url = `sqlite:${file}`;
    store = new RegExp(`^Store: SQLite ${file}: `);
  }
  const first = await seed(repo, url);
  expect(first.code, first.out).toBe(0);
  expect(first.out).toMatch(store);
  expect(first.out).toMatch(/added the demo study guide/);
  const after = await contentCounts(url);
  expect(after).toEqual([1, 2, 7]);

  const second = await seed(repo, url);
  expect(second.code, second.out).toBe(0);
  expect(second.out).toMatch(store);
  expect(second.out).toMatch(/is there already \(nothing added\)/);
  expect(await contentCounts(url)).toEqual(after);
  // Both runs print the same quiz ids.
  const ids = (out: string) => [...out.matchAll(/quiz (\d+):/g)].map((m) => m[1]);
  expect(ids(second.out)).toEqual(ids(first.out));
  expect(ids(first.out)).toHaveLength(2);
}, 90_000);

it.skipIf(testStore() === "mysql")(
  "with no DATABASE_URL, uses npm start's store: ./data/practice.db",
  async () => {
    const cwd = mkdtempSync(join(temp, "default-"));
    const run = await seed(cwd, undefined);
    expect(run.code, run.out).toBe(0);
    const file = join(cwd, "data/practice.db");
    expect(run.out).toMatch(new RegExp(`^Store: SQLite ${file}: added`));
    expect(existsSync(file)).toBe(true);
  },
  60_000,
);

it("prints the practice link npm start would print, with the same settings", async () => {
  const cwd = mkdtempSync(join(temp, "link-"));
  const url = testStore() === "mysql" ? newTestDatabaseUrl("mysql") : `sqlite:${join(cwd, "x.db")}`;
  if (testStore() === "mysql") dropAfter.push(url);
  const run = await seed(cwd, url, { PORT: "8123" });
  expect(run.code, run.out).toBe(0);
  expect(run.out).toMatch(
    /^Practise quiz \d+ in the browser, as user 'demo':\n {2}http:\/\/127\.0\.0\.1:8123\/practice\/\?quiz=\d+#token=[\w-]+\.[\w-]+\.[\w-]+$/m,
  );
}, 60_000);

it.runIf(testStore() === "mysql")(
  "on an empty MariaDB, npm start prints the exact seed command (store, port, page); run as printed, it seeds that store and the service lists the quizzes at once",
  async () => {
    const cwd = mkdtempSync(join(temp, "banner-"));
    const url = newTestDatabaseUrl("mysql");
    dropAfter.push(url);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: url,
      PORT: "0",
      METRICS_PORT: "0",
      PRACTICE_PAGE: "off",
      LOG_LEVEL: "warn",
    };
    const service = spawn(process.execPath, ["--import", tsx, join(repo, "src/main.ts")], {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      let out = "";
      service.stdout.on("data", (d) => {
        out += d;
      });
      service.stderr.on("data", (d) => {
        out += d;
      });
      await expect.poll(() => out, { timeout: 45_000, interval: 200 }).toMatch(/then try it:/i);
      const command = /^ {2}((?:[A-Z_]+=\S+ )+)npm run seed:demo$/m.exec(out)?.[1] ?? "";
      const printed = Object.fromEntries(
        [...command.matchAll(/([A-Z_]+)='?([^' ]+)'? /g)].map((m) => [m[1], m[2]]),
      );
      const base = /^Start here: (http:\/\/127\.0\.0\.1:(\d+))\//m.exec(out);
      // The banner opens with the version package.json says.
      const { version } = JSON.parse(readFileSync(join(repo, "package.json"), "utf8"));
      expect(out).toMatch(
        new RegExp(`^practice-sessions ${version.replaceAll(".", "\\.")}\nStart here: `, "m"),
      );
      expect(printed, out).toEqual({ DATABASE_URL: url, PORT: base?.[2], PRACTICE_PAGE: "off" });
      // A development start: a refused call says how to get a token.
      const refused = (await (await fetch(`${base?.[1]}/quizzes`)).json()) as { detail: string };
      expect(refused.detail).toBe(
        "no bearer token: send the header authorization: Bearer <token>; in development, `npm run -s token -- alice` prints one",
      );
      const token = /^ {2}export TOKEN=(\S+)$/m.exec(out)?.[1];
      // Run as printed: the command's settings, nothing else set.
      const seeded = await seed(cwd, printed.DATABASE_URL, printed);
      expect(seeded.code, seeded.out).toBe(0);
      expect(seeded.out).toMatch(/^Store: MySQL .+: added the demo study guide/);
      const res = await fetch(`${base?.[1]}/quizzes`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const body = (await res.json()) as { quizzes: { title: string }[] };
      expect(body.quizzes.map((q) => q.title)).toEqual(["Capitals", "Arithmetic"]);
    } finally {
      service.kill("SIGTERM");
    }
  },
  90_000,
);
