import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadPracticePage } from "../../src/web/practice-page.js";
import { startTestService, type TestService } from "../support/service.js";

describe("GET /: where to go from here", () => {
  let dir: string;
  let svc: TestService;
  let bare: TestService;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "home-page-"));
    await mkdir(join(dir, "assets"));
    await writeFile(join(dir, "index.html"), "<!doctype html><title>page</title>");
    svc = await startTestService({ practicePage: await loadPracticePage(dir) });
    bare = await startTestService();
  });
  afterAll(async () => {
    await svc?.close();
    await bare?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** What package.json says: the version `/` must show, whatever it is. */
  const installed = async () =>
    (
      JSON.parse(await readFile(resolve(import.meta.dirname, "../../package.json"), "utf8")) as {
        version: string;
      }
    ).version;
  const hrefs = (html: string) => [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]);

  it("a browser gets a small page linking the practice page, the OpenAPI document and health, each of which answers", async () => {
    const res = await fetch(`${svc.baseUrl}/`, {
      headers: { accept: "text/html,application/xhtml+xml,*/*;q=0.8" },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const html = await res.text();
    expect(hrefs(html)).toEqual(["/practice/", "/openapi.json", "/healthz", "/readyz"]);
    expect(html).toMatch(/README\.md and docs\//);
    expect(html).toContain(`<h1>Practice sessions <small>${await installed()}</small></h1>`);
    for (const href of hrefs(html)) {
      expect((await fetch(`${svc.baseUrl}${href}`)).status, href).toBe(200);
    }
  });

  it("curl without an Accept header gets the page too", async () => {
    const res = await fetch(`${svc.baseUrl}/`, { headers: { accept: "*/*" } });
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
  });

  it("Accept: application/json gets the same links as JSON", async () => {
    const res = await fetch(`${svc.baseUrl}/`, { headers: { accept: "application/json" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const body = (await res.json()) as { links: { rel: string; href: string }[]; docs: string };
    expect(body.links.map((l) => [l.rel, l.href])).toEqual([
      ["practice-page", "/practice/"],
      ["openapi", "/openapi.json"],
      ["healthz", "/healthz"],
      ["readyz", "/readyz"],
    ]);
    expect(body.docs).toMatch(/README\.md/);
    expect(body).toMatchObject({ name: "practice-sessions", version: await installed() });
  });

  it("without the practice page (PRACTICE_PAGE=off), it does not link it", async () => {
    const html = await (await fetch(`${bare.baseUrl}/`)).text();
    expect(hrefs(html)).toEqual(["/openapi.json", "/healthz", "/readyz"]);
  });
});
