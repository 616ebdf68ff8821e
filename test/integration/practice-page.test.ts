import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPracticePage } from "../../src/web/practice-page.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * The service serving the practice page (a stand-in build: the real one is
 * built and driven in Chromium by test/browser).
 */
describe("the practice page served by the service", () => {
  const INDEX = '<!doctype html><script type="module" src="./assets/index-abc.js"></script>';
  const SCRIPT = "console.log('page');";
  let dir: string;
  let svc: TestService;
  let bare: TestService;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "practice-page-"));
    await mkdir(join(dir, "assets"));
    await writeFile(join(dir, "index.html"), INDEX);
    await writeFile(join(dir, "assets", "index-abc.js"), SCRIPT);
    svc = await startTestService({ practicePage: await loadPracticePage(dir) });
    bare = await startTestService();
  });

  afterAll(async () => {
    await svc?.close();
    await bare?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("answers /practice/ with the page, without a token, same-origin only", async () => {
    const res = await svc.rest(null, "GET", "/practice/?quiz=1");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    // The page may call only its own origin: the token it holds goes nowhere else.
    expect(res.headers.get("content-security-policy")).toContain("connect-src 'self'");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(await res.text()).toBe(INDEX);
  });

  it("redirects /practice to /practice/, keeping the query", async () => {
    const res = await svc.rest(null, "GET", "/practice?quiz=7", { redirect: "manual" });
    expect(res.status).toBe(308);
    expect(res.headers.get("location")).toBe("/practice/?quiz=7");
  });

  it("serves the hashed assets for good, and a 404 problem for any other name", async () => {
    const res = await svc.rest(null, "GET", "/practice/assets/index-abc.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(res.headers.get("cache-control")).toContain("immutable");
    expect(await res.text()).toBe(SCRIPT);

    // Gzipped for a client that accepts it (fetch does, and decodes it).
    expect(res.headers.get("content-encoding")).toBe("gzip");
    const plain = await svc.rest(null, "GET", "/practice/assets/index-abc.js", {
      headers: { "accept-encoding": "identity" },
    });
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(await plain.text()).toBe(SCRIPT);

    for (const path of ["/practice/assets/nope.js", "/practice/assets/..%2Findex.html"]) {
      const missing = await svc.rest(null, "GET", path);
      expect(missing.status).toBe(404);
      expect(missing.headers.get("content-type")).toContain("application/problem+json");
    }
  });

  it("is not there unless the service was given a page (production's default)", async () => {
    const res = await bare.rest(null, "GET", "/practice/");
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "not_found", detail: "no such route" });
  });
});
