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
export async function startThrowawayServers(
  names: { name: string; port: number }[],
): Promise<{ servers: Server[]; stop(): Promise<void> }> {
  const set = new ServerSet();
  try {
    const servers: Server[] = [];
    for (const { name, port } of names) servers.push(await set.standalone(name, port));
    return { servers, stop: () => set.removeAll() };
  } catch (err) {
    await set.removeAll();
    throw err;
  }
}
