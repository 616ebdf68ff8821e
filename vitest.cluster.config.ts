import { defineConfig } from "vitest/config";

/**
 * `npm run test:cluster`: the service on a 3-node MariaDB Galera cluster and
 * on a primary with an async read replica, all built on this machine by
 * test/cluster/support/global-setup.ts (run as root; needs galera-4 and
 * rsync) and torn down at the end. One file at a time: they share the servers.
 */
export default defineConfig({
  test: {
    include: ["test/cluster/**/*.cluster.ts"],
    globalSetup: ["test/cluster/support/global-setup.ts"],
    env: { TEST_STORE: "mysql" },
    pool: "forks",
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
