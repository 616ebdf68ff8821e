import { spawn } from "node:child_process";
import { setPriority } from "node:os";

/**
 * A client of test/support (`script`, run with tsx) in a process of its own,
 * niced: its own CPU is not the service's to share (on a 2-core box it would
 * take a core from the service; across a network it takes none). `result`
 * is the JSON line it prints before it exits 0.
 */
export function clientProcess<T>(script: string, args: string[]) {
  const child = spawn(process.execPath, ["--import", "tsx", `test/support/${script}`, ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  if (child.pid !== undefined) setPriority(child.pid, 19);
  let out = "";
  child.stdout.on("data", (chunk) => {
    out += chunk;
  });
  // "close", not "exit": a process may exit before its last output is read.
  const result = new Promise<T>((resolve, reject) => {
    child.once("close", (code) => {
      if (code !== 0) return reject(new Error(`${script} exited ${code}`));
      try {
        resolve(JSON.parse(out) as T);
      } catch (e) {
        reject(new Error(`${script} printed no JSON line (${out.length} characters): ${e}`));
      }
    });
  });
  return { child, result };
}
