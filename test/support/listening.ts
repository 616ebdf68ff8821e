import type { ChildProcess } from "node:child_process";
import { TEST_SECRET } from "./service.js";

/**
 * Reads a spawned service's stdout (so its pipe never fills) and resolves
 * with the port of its "listening" log line; rejects if it exits first.
 * `output()` is everything it has printed so far.
 */
export function listeningPort(child: ChildProcess): {
  port: Promise<number>;
  output: () => string;
} {
  let out = "";
  const port = new Promise<number>((resolve, reject) => {
    child.stdout?.on("data", (chunk) => {
      out += chunk;
      const match = /"port":(\d+).*"msg":"listening"/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once("exit", () => reject(new Error(`service exited before listening:\n${out}`)));
  });
  return { port, output: () => out };
}

/**
 * The environment of a service a test spawns: this process's, the test
 * secret, a free port on 127.0.0.1 (read back with `listeningPort`), no
 * metrics port, info logs (the listening line), then `extra`.
 */
export function serviceEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  return {
    ...process.env,
    JWT_SECRET: TEST_SECRET,
    HOST: "127.0.0.1",
    PORT: "0",
    METRICS_PORT: "0",
    LOG_LEVEL: "info",
    ...extra,
  };
}
