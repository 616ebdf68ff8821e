import { readdir, readFile } from "node:fs/promises";
import { extname, join } from "node:path";
import { gzipSync } from "node:zlib";
import type { App, AppReply, AppRequest } from "../app-server.js";

/** Where the practice page is served. */
export const PRACTICE_PAGE_PATH = "/practice/";

/** One file of the built page, held in memory with its gzip form. */
interface PageFile {
  body: Buffer;
  gzip: Buffer;
  type: string;
}

function pageFile(body: Buffer, type: string): PageFile {
  return { body, gzip: gzipSync(body), type };
}

/** The built page: `index.html` and the hashed files under `assets/`. */
export interface PracticePageFiles {
  index: PageFile;
  assets: Map<string, PageFile>;
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".woff2": "font/woff2",
};

/**
 * The page's own files only, and calls to its own origin only: the token
 * the page holds can go nowhere else, even through injected markup.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Reads a Vite build of examples/web (`index.html`, `assets/*`) into memory. */
export async function loadPracticePage(dir: string): Promise<PracticePageFiles> {
  const index = pageFile(await readFile(join(dir, "index.html")), "text/html; charset=utf-8");
  const assets = new Map<string, PageFile>();
  for (const name of await readdir(join(dir, "assets")).catch(() => [])) {
    const type = TYPES[extname(name)] ?? "application/octet-stream";
    assets.set(name, pageFile(await readFile(join(dir, "assets", name)), type));
  }
  return { index, assets };
}

export interface PracticePageOptions {
  files: PracticePageFiles;
  /** Answers a path that names no file (the service's problem+json 404). */
  notFound: (reply: AppReply) => AppReply;
}

/**
 * Serves the practice page at `/practice/` from memory. Public: the page holds
 * no data and reads the user's token from the URL fragment.
 */
export async function practicePageRoutes(app: App, { files, notFound }: PracticePageOptions) {
  const securityHeaders = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
  };

  // Relative asset URLs need the trailing slash: keep the query (the quiz).
  app.get("/practice", async (request, reply) => {
    const query = request.url.slice("/practice".length);
    return reply.redirect(`${PRACTICE_PAGE_PATH}${query}`, 308);
  });

  app.get(PRACTICE_PAGE_PATH, async (request, reply) =>
    send(request, reply, files.index, {
      ...securityHeaders,
      "cache-control": "no-cache",
      "content-security-policy": CONTENT_SECURITY_POLICY,
    }),
  );

  app.get<{ Params: { name: string } }>(
    `${PRACTICE_PAGE_PATH}assets/:name`,
    async (request, reply) => {
      const file = files.assets.get(request.params.name);
      if (!file) return notFound(reply);
      return send(request, reply, file, {
        ...securityHeaders,
        "cache-control": "public, max-age=31536000, immutable",
      });
    },
  );
}

/** Sends a file, gzipped when the client accepts it. */
function send(
  request: AppRequest,
  reply: AppReply,
  file: PageFile,
  headers: Record<string, string>,
) {
  const gzip = /\bgzip\b/.test(String(request.headers["accept-encoding"] ?? ""));
  reply.headers({ ...headers, "content-type": file.type, vary: "accept-encoding" });
  if (gzip) reply.header("content-encoding", "gzip");
  return reply.send(gzip ? file.gzip : file.body);
}
