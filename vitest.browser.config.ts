import { defineConfig } from "vitest/config";

/**
 * `npm run test:browser`: the example page (examples/web) in Debian's Chromium
 * against the real service, on two origins. Not part of `npm test`: it needs
 * /usr/bin/chromium (CHROMIUM_PATH to use another).
 */
export default defineConfig({
  test: {
    name: "browser",
    include: ["test/browser/**/*.test.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 120_000,
  },
});
