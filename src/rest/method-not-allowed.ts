import type { App } from "../app-server.js";

/** The order methods are listed in an `Allow` header. */
const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/**
 * Which methods each route path takes, from the routes as they are added, so
 * that a request the router has no route for can be told apart: a known path
 * with another method is 405 with `Allow` (RFC 9110 §15.5.6), anything else
 * 404. Catch-all routes (`*`, such as CORS's preflight) make no path known.
 * Call before any route is added.
 */
export function routeMethods(app: App): (url: string) => string[] {
  const routes: { pattern: RegExp; methods: Set<string> }[] = [];
  const byPath = new Map<string, Set<string>>();
  app.addHook("onRoute", (route) => {
    if (route.url.includes("*")) return;
    let methods = byPath.get(route.url);
    if (methods === undefined) {
      methods = new Set();
      byPath.set(route.url, methods);
      routes.push({ pattern: patternOf(route.url), methods });
    }
    for (const method of [route.method].flat()) methods.add(method);
  });
  return (url) => {
    const path = url.split("?")[0] ?? url;
    const allowed = new Set<string>();
    for (const { pattern, methods } of routes) {
      if (pattern.test(path)) for (const method of methods) allowed.add(method);
    }
    return [...allowed].sort((a, b) => rank(a) - rank(b));
  };
}

function rank(method: string): number {
  const i = METHOD_ORDER.indexOf(method);
  return i === -1 ? METHOD_ORDER.length : i;
}

/** A route path (`/sessions/:id`) as a regular expression over request paths. */
function patternOf(path: string): RegExp {
  const source = path
    .split("/")
    .map((part) => (part.startsWith(":") ? "[^/]+" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${source}/?$`);
}

/** A known path asked with a method it does not take: 405, `unimplemented`. */
export class MethodNotAllowed extends Error {
  override name = "MethodNotAllowed";
  readonly statusCode = 405;
  constructor(method: string, allow: readonly string[]) {
    super(`${method} is not allowed here; allowed: ${allow.join(", ")}`);
  }
}
