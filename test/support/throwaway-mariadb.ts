import { existsSync } from "node:fs";
import { type Server, ServerSet } from "../cluster/support/mariadb-servers.js";

/**
 * Why this machine cannot start a throwaway MariaDB server (mariadbd and
 * mariadb-install-db, run as root so that mariadbd may run as `mysql`), or
 * undefined when it can. In CI a missing one fails instead of skipping.
 */
export function throwawayUnavailable(): string | undefined {
  const why = !existsSync("/usr/sbin/mariadbd")
    ? "no /usr/sbin/mariadbd"
    : process.getuid?.() !== 0
      ? "not root (mariadbd is started --user=mysql)"
      : undefined;
  if (why && process.env.CI) throw new Error(`CI needs a throwaway MariaDB server: ${why}`);
  return why;
}

/**
 * Throwaway MariaDB servers on their own ports and datadirs, never the shared
 * one on 3306 (a test may change their global settings). `stop()` removes them.
 */
export function startThrowawayServers(
  names: { name: string; port: number; options?: Record<string, string | number | null> }[],
): Promise<{ servers: Server[]; stop(): Promise<void> }> {
  return started(async (set) => {
    const servers: Server[] = [];
    for (const { name, port, options } of names) {
      servers.push(await set.standalone(name, port, options));
    }
    return servers;
  });
}

/**
 * Two throwaway servers equal in host name, port, data directory and server_id, on
 * 127.0.0.1 and 127.0.0.2 (`ServerSet.twins`). `stop()` removes them.
 */
export function startTwinServers(
  name: string,
  port: number,
): Promise<{ servers: Server[]; stop(): Promise<void> }> {
  return started((set) => set.twins(name, port));
}

async function started(
  start: (set: ServerSet) => Promise<Server[]>,
): Promise<{ servers: Server[]; stop(): Promise<void> }> {
  const set = new ServerSet();
  try {
    return { servers: await start(set), stop: () => set.removeAll() };
  } catch (err) {
    await set.removeAll();
    throw err;
  }
}
