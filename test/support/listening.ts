import type { ChildProcess } from "node:child_process";

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
