import { signToken } from "./auth/tokens.js";
import { type Config, DEFAULT_DATABASE_URL, DEFAULT_PORT } from "./config.js";
import { describeStore } from "./db/store-url.js";
import { PRACTICE_PAGE_PATH } from "./web/practice-page.js";

/**
 * What `npm start` and `npm run seed:demo` print for someone trying the
 * service: the exact command that seeds the store the service uses, and the
 * practice page's link with a development token.
 */

/**
 * `npm run seed:demo` as it must be typed for this service: with each setting
 * the seed reads that is not its default (the store, and the port, TLS and
 * page its practice link depends on), a password shown as **** for the reader
 * to fill in: the banner is no place for it.
 */
export function seedDemoCommand(o: {
  databaseUrl: string;
  port?: number;
  tls?: Config["tls"];
  practicePage?: boolean;
}): string {
  const settings: string[] = [];
  if (o.databaseUrl !== DEFAULT_DATABASE_URL) {
    let shown = o.databaseUrl;
    if (URL.canParse(shown)) {
      const url = new URL(shown);
      if (url.password !== "") {
        url.password = "****";
        shown = url.toString();
      }
    }
    settings.push(`DATABASE_URL=${shellQuote(shown)}`);
  }
  if (o.port !== undefined && o.port !== DEFAULT_PORT) settings.push(`PORT=${o.port}`);
  if (o.tls) {
    settings.push(`TLS_CERT_FILE=${shellQuote(o.tls.certFile)}`);
    settings.push(`TLS_KEY_FILE=${shellQuote(o.tls.keyFile)}`);
  }
  if (o.practicePage === false) settings.push("PRACTICE_PAGE=off");
  return [...settings, "npm run seed:demo"].join(" ");
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}

/** The service's address as this machine reaches it. */
export function localBase(config: Pick<Config, "tls">, port: number): string {
  return `${config.tls ? "https" : "http"}://127.0.0.1:${port}`;
}

/** What a refused credential adds on a development start: how to get a token. */
export const TOKEN_HINT = "in development, `npm run -s token -- alice` prints one";

/** A development token for user 'demo', valid 30 days. */
export function demoToken(secret: string): Promise<string> {
  return signToken(secret, "demo", { ttlSeconds: 30 * 86_400 });
}

/** The lines that link the practice page of `quizId`, as user 'demo'. */
export function practiceLinkLines(base: string, quizId: string, token: string): string[] {
  // The token goes in the fragment: browsers never send it to the server.
  return [
    `Practise quiz ${quizId} in the browser, as user 'demo':`,
    `  ${base}${PRACTICE_PAGE_PATH}?quiz=${quizId}#token=${token}`,
  ];
}

/** What `npm start` prints on a development start (no JWT key set): where to go, and a token. */
export function devBanner(o: {
  /** The service's version (package.json). */
  version: string;
  scrapePort: number;
  databaseUrl: string;
  port: number;
  tls: Config["tls"];
  quizIds: readonly string[];
  token: string;
  practicePage: boolean;
}): string {
  const base = localBase(o, o.port);
  const quiz = o.quizIds[0] ?? "QUIZ_ID";
  const hasQuizzes = o.quizIds.length > 0;
  return [
    "",
    `practice-sessions ${o.version}`,
    `Start here: ${base}/ (where to go next: the API document, health, the docs)`,
    `Metrics: http://127.0.0.1:${o.scrapePort}/metrics (METRICS_PORT)`,
    `Store: ${describeStore(o.databaseUrl)}`,
    ...(o.practicePage && hasQuizzes ? practiceLinkLines(base, quiz, o.token) : []),
    "No JWT key configured: using a development secret (.dev-jwt-secret). Token for user 'demo':",
    `  export TOKEN=${o.token}`,
    ...(hasQuizzes
      ? [`Try it on quiz ${quiz}:`]
      : [
          "No quizzes yet. To add the two demo quizzes to this store, run in another shell:",
          `  ${seedDemoCommand(o)}`,
          "(it prints the practice link). Then try it:",
        ]),
    `  curl -s -X POST -H "authorization: Bearer $TOKEN" ${base}/quizzes/${quiz}/sessions`,
    `  curl -s -H "authorization: Bearer $TOKEN" ${base}/quizzes/${quiz}/sessions`,
    "",
  ].join("\n");
}
