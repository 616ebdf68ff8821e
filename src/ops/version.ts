import { readFileSync } from "node:fs";
import { join } from "node:path";
import { projectRoot } from "./patches-applied.js";

/**
 * The service's version: package.json's "version", read once at start-up,
 * so the banner, `GET /` and the OpenAPI document say what was installed.
 */
export const SERVICE_VERSION: string = (
  JSON.parse(readFileSync(join(projectRoot(), "package.json"), "utf8")) as { version: string }
).version;
