import { existsSync } from "node:fs";
import type { TestProject } from "vitest/node";
import { ServerSet } from "./mariadb-servers.js";

/** What every cluster test file gets (`inject("cluster")`). */
export interface ClusterUrls {
  /** Root on each Galera node: `mysql://root@127.0.0.1:1340N/`. */
  galera: string[];
  primary: string;
  replica: string;
  /** Seconds each took to build. */
  builtInSeconds: { galera: number; primaryAndReplica: number };
}

declare module "vitest" {
  export interface ProvidedContext {
    cluster: ClusterUrls;
  }
}

/**
 * Builds the servers once for the whole run and tears them down at the end,
 * also on a failure and on Ctrl-C. CLUSTER_URLS (JSON of ClusterUrls) reuses
 * servers started by hand instead, for working on a test.
 */
export default async function setup(project: TestProject) {
  if (process.env.CLUSTER_URLS) {
    project.provide("cluster", JSON.parse(process.env.CLUSTER_URLS) as ClusterUrls);
    return;
  }
  if (!existsSync("/usr/lib/galera/libgalera_smm.so") || !existsSync("/usr/bin/rsync")) {
    throw new Error("test:cluster needs Debian's galera-4 and rsync (.ci/run installs them)");
  }
  if (process.getuid?.() !== 0) {
    throw new Error("test:cluster starts mariadbd --user=mysql: run it as root (as CI does)");
  }
  const servers = new ServerSet();
  const stopOnSignal = (signal: NodeJS.Signals) => {
    void servers.removeAll().finally(() => process.kill(process.pid, signal));
  };
  process.once("SIGINT", stopOnSignal);
  process.once("SIGTERM", stopOnSignal);
  try {
    let t0 = performance.now();
    const galera = await servers.galera();
    const galeraSeconds = (performance.now() - t0) / 1000;
    t0 = performance.now();
    const { primary, replica } = await servers.primaryAndReplica();
    const pairSeconds = (performance.now() - t0) / 1000;
    console.log(
      `cluster: 3 Galera nodes synced from nothing in ${galeraSeconds.toFixed(1)} s; primary + replica in ${pairSeconds.toFixed(1)} s`,
    );
    project.provide("cluster", {
      galera: galera.map((n) => n.url),
      primary: primary.url,
      replica: replica.url,
      builtInSeconds: { galera: galeraSeconds, primaryAndReplica: pairSeconds },
    });
  } catch (err) {
    await servers.removeAll();
    throw err;
  }
  return async () => {
    process.off("SIGINT", stopOnSignal);
    process.off("SIGTERM", stopOnSignal);
    await servers.removeAll();
  };
}
