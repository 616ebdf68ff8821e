import type { App } from "../app-server.js";
import { PRACTICE_PAGE_PATH } from "./practice-page.js";

export interface HomePageOptions {
  /** Whether the practice page is served here (PRACTICE_PAGE). */
  practicePage: boolean;
  /** The service's version (package.json). */
  version: string;
}

interface Link {
  rel: string;
  href: string;
  title: string;
}

/** Where the docs are: they ship with the source, not with the service. */
const DOCS =
  "README.md and docs/ in the source repository; the gRPC and Connect API is proto/practice/v1/";

/**
 * `GET /`: where to go from here, for a person (HTML) or a program
 * (`Accept: application/json`). Public and static: it says nothing a
 * caller could not learn from the routes themselves.
 */
export async function homePageRoutes(app: App, { practicePage, version }: HomePageOptions) {
  const links: Link[] = [
    ...(practicePage
      ? [
          {
            rel: "practice-page",
            href: PRACTICE_PAGE_PATH,
            title:
              "practise a quiz in the browser: the list of quizzes. The page needs a sign-in " +
              "token at the end of its address (/practice/#token=...): open the link the " +
              "service prints when it starts, or print a development token with " +
              "npm run -s token -- NAME and add #token= and the token to the address",
          },
        ]
      : []),
    { rel: "openapi", href: "/openapi.json", title: "the REST API, OpenAPI 3.1" },
    { rel: "healthz", href: "/healthz", title: "liveness: the process answers" },
    { rel: "readyz", href: "/readyz", title: "readiness: the database answers" },
  ];
  const json = {
    name: "practice-sessions",
    version,
    description: "Quiz practice sessions over REST, gRPC, gRPC-Web and Connect on this port",
    links,
    docs: DOCS,
  };
  const html = page(links, version);

  app.get("/", async (request, reply) => {
    reply.header("vary", "accept");
    if (prefersJson(String(request.headers.accept ?? ""))) return json;
    return reply
      .headers({
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": "default-src 'none'; base-uri 'none'; form-action 'none'",
        "x-content-type-options": "nosniff",
      })
      .send(html);
  });
}

/** JSON when asked for and HTML is not: browsers list text/html, `curl -H 'accept: application/json'` does not. */
function prefersJson(accept: string): boolean {
  return /\bapplication\/json\b/.test(accept) && !/\btext\/html\b/.test(accept);
}

function page(links: Link[], version: string): string {
  const items = links
    .map((l) => `    <li><a href="${l.href}">${l.href}</a>: ${l.title}</li>`)
    .join("\n");
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Practice sessions</title>
  </head>
  <body>
    <h1>Practice sessions <small>${version}</small></h1>
    <p>Quiz practice sessions over REST, gRPC, gRPC-Web and Connect on this port.</p>
    <ul>
${items}
    </ul>
    <p>Docs: ${DOCS}.</p>
  </body>
</html>
`;
}
