import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

/** The repository's root. */
export const REPO = resolve(import.meta.dirname, "../..");

export interface EntryRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stderr's non-blank lines. */
  errorLines: string[];
}

export interface EntryOptions {
  /** Added to this process's environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  args?: string[];
  cwd?: string;
  /** Killed after this long (tsx compiles the entry first: slow on a busy machine). */
  timeoutMs?: number;
}

/**
 * Runs an entry point of the repository (`src/main.ts`, `scripts/migrate.ts`...)
 * as `npm start` / `npm run` do, and resolves when it exits.
 */
export function runEntryPoint(file: string, options: EntryOptions = {}): Promise<EntryRun> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  const tsx = pathToFileURL(join(REPO, "node_modules/tsx/dist/loader.mjs")).href;
  return new Promise((done) => {
    const child = spawn(
      process.execPath,
      ["--import", tsx, join(REPO, file), ...(options.args ?? [])],
      { cwd: options.cwd ?? REPO, env, stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 90_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      const errorLines = stderr.split("\n").filter((l) => l.trim() !== "");
      done({ code, stdout, stderr, errorLines });
    });
  });
}
