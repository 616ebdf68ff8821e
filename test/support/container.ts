import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";

/**
 * The service as its container runs it (Dockerfile, deploy/kubernetes.yaml),
 * for tests of what it holds: a memory cgroup of the manifest's limit and
 * the image's allocator.
 */

/**
 * A memory cgroup of the test's own, limited as the service's container is:
 * a process started in it (`wrap`) sees the limit as Node does in a
 * container (its heap is sized from it) and is killed past it, as the
 * kubelet's OOM killer would. cgroup v2, or v1's memory controller; as root.
 */
export interface MemoryCgroup {
  /** The command and arguments that run `command` inside the cgroup. */
  wrap(command: string, args: string[]): [string, string[]];
  /** The most the cgroup's processes have held at once, in bytes. */
  peak(): number;
  remove(): void;
}

const V2 = "/sys/fs/cgroup";
const V1 = "/sys/fs/cgroup/memory";

/** A memory cgroup limited to `limitBytes`, or why this machine cannot make one. */
export function memoryCgroup(limitBytes: number): MemoryCgroup | string {
  if (process.getuid?.() !== 0) return "not root";
  const name = `practice-test-${randomBytes(4).toString("hex")}`;
  const v2 = existsSync(`${V2}/cgroup.subtree_control`);
  const dir = v2 ? `${V2}/${name}` : `${V1}/${name}`;
  if (!v2 && !existsSync(`${V1}/memory.limit_in_bytes`)) return "no memory cgroup controller";
  try {
    mkdirSync(dir);
    writeFileSync(`${dir}/${v2 ? "memory.max" : "memory.limit_in_bytes"}`, String(limitBytes));
  } catch (err) {
    return `cannot make a memory cgroup: ${(err as Error).message}`;
  }
  return {
    // The shell joins the cgroup, then becomes the command: Node starts inside it.
    wrap: (command, args) => [
      "/bin/sh",
      ["-c", `echo $$ > ${dir}/cgroup.procs && exec "$0" "$@"`, command, ...args],
    ],
    peak: () =>
      Number(
        readFileSync(`${dir}/${v2 ? "memory.peak" : "memory.max_usage_in_bytes"}`, "utf8").trim(),
      ),
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // Still holds a process (a test that failed to stop it): left for the machine.
      }
    },
  };
}

/**
 * The image's allocator (the Dockerfile's LD_PRELOAD and MALLOC_CONF), with
 * the library found on this machine: the environment to run the service
 * with, or why it cannot be (Debian: apt-get install libjemalloc2).
 */
export function imageAllocator(): Record<string, string> | string {
  const dockerfile = readFileSync("Dockerfile", "utf8");
  const conf = /MALLOC_CONF=(\S+)/.exec(dockerfile)?.[1];
  if (conf === undefined) return "no MALLOC_CONF in the Dockerfile";
  const found = execFileSync("find", ["/usr/lib", "-name", "libjemalloc.so.2"], {
    encoding: "utf8",
  })
    .split("\n")
    .find((line) => line !== "");
  if (found === undefined)
    return "no libjemalloc.so.2 on this machine (apt-get install libjemalloc2)";
  return { LD_PRELOAD: found, MALLOC_CONF: conf };
}

/** The service container's NODE_OPTIONS in deploy/kubernetes.yaml ("" if none). */
export function manifestNodeOptions(): string {
  const manifest = readFileSync("deploy/kubernetes.yaml", "utf8");
  const service = manifest.slice(manifest.indexOf("\n      containers:"));
  return /- name: NODE_OPTIONS\s*\n\s*value: (.+)\n/.exec(service)?.[1]?.trim() ?? "";
}

/** The service container's memory limit in deploy/kubernetes.yaml, in bytes. */
export function manifestMemoryLimit(): number {
  const manifest = readFileSync("deploy/kubernetes.yaml", "utf8");
  const service = manifest.slice(manifest.indexOf("\n      containers:"));
  const limit = /limits:\s*\n(?:\s+\w+: .*\n)*?\s+memory: (\d+)(Mi|Gi)/.exec(service);
  if (limit === null) throw new Error("no memory limit for the service in deploy/kubernetes.yaml");
  return Number(limit[1]) * (limit[2] === "Gi" ? 1024 ** 3 : 1024 ** 2);
}
