/**
 * The settings of `npm run bench`, read once from the environment (see
 * BENCHMARKS.md), and the constants every phase shares.
 */

const env = process.env;
/** BENCH_QUICK=1: two history levels, 1 s runs, one round: a pass that ends in minutes. */
export const QUICK = env.BENCH_QUICK === "1";
export const SERVER_URL = env.BENCH_DATABASE_URL ?? "mysql://root@127.0.0.1:3306/";
export const LEVELS = QUICK ? [10, 1_000] : [10, 1_000, 100_000];
if (env.BENCH_MAX && !QUICK) LEVELS.push(Number(env.BENCH_MAX));
export const BIG = LEVELS.at(-1) as number;
/** The history size of the main matrices (100,000 unless BENCH_MAX raises it). */
export const MAIN_LEVEL = Math.min(BIG, 100_000);
export const DURATION_MS = Number(env.BENCH_DURATION_MS ?? (QUICK ? 1000 : 5000));
export const ROUNDS = Number(env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
export const SOAK_REQUESTS = Number(env.BENCH_SOAK_REQUESTS ?? (QUICK ? 20_000 : 200_000));
export const CREATES = Number(env.BENCH_CREATES ?? (QUICK ? 500 : 2000));
export const POOL_SIZE = 10;
export const CONCURRENCIES = [1, 16, 64];
export const SECRET = "bench-secret-bench-secret-bench-secret-0123";
export const LIST_PATH = "/practice.v1.PracticeSessionService/ListSessions";
export const START_PATH = "/practice.v1.PracticeSessionService/StartSession";
export const QUIZ_PATH = "/practice.v1.QuizService/GetQuiz";
/** `quiz`: only GetQuiz (accounting and timed runs), for a short pass on a shared machine. */
export const ONLY = env.BENCH_ONLY;
export const PROFILE = env.BENCH_PROFILE === "1";
/** BENCH_KEEP=1 leaves the generated databases in place after the run. */
export const KEEP = env.BENCH_KEEP === "1";
/** e.g. BENCH_SERVICE_NODE_FLAGS=--max-old-space-size=64 for the memory soak. */
export const SERVICE_NODE_FLAGS = (env.BENCH_SERVICE_NODE_FLAGS ?? "").split(" ").filter(Boolean);

/** Progress on stderr, so that stdout carries only the Markdown report. */
export function log(msg: string): void {
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);
}
