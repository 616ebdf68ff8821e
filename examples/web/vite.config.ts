import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));
const repo = fileURLToPath(new URL("../..", import.meta.url));

// Dependencies come from the repository's root package.json (see README.md).
export default defineConfig({
  root: here,
  // Relative asset URLs: the built page works from any path or static host.
  base: "./",
  // The dev server may read the generated code in ../../gen.
  server: { port: 5173, strictPort: true, fs: { allow: [repo] } },
  preview: { port: 4173, strictPort: true },
  build: { outDir: "dist", emptyOutDir: true, target: "es2022" },
});
