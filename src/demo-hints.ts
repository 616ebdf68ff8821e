import { signToken } from "./auth/tokens.js";
import { type Config, DEFAULT_DATABASE_URL } from "./config.js";
import { describeStore } from "./db/store-url.js";
import { PRACTICE_PAGE_PATH } from "./web/practice-page.js";

/**
 * What `npm start` and `npm run seed:demo` print for someone trying the
 * service: the exact command that seeds the store the service uses, and the
 * practice page's link with a development token.
 */

/**
 * `npm run seed:demo` as it must be typed for the store at `databaseUrl`:
 * with DATABASE_URL when it is not the default (a password shown as ****,
 * for the reader to fill in: the banner is no place for it).
 */
export function seedDemoCommand(databaseUrl: string): string {
  if (databaseUrl === DEFAULT_DATABASE_URL) return "npm run seed:demo";
  let shown = databaseUrl;
  if (URL.canParse(databaseUrl)) {
    const url = new URL(databaseUrl);
    if (url.password !== "") {
      url.password = "****";
      shown = url.toString();
    }
  }
  return `DATABASE_URL='${shown.replaceAll("'", "'\\''")}' npm run seed:demo`;
}

/** The service's address as this machine reaches it. */
export function localBase(config: Pick<Config, "tls">, port: number): string {
  return `${config.tls ? "https" : "http"}://127.0.0.1:${port}`;
}

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
  base: string;
  scrapePort: number;
  databaseUrl: string;
  quizIds: readonly string[];
  token: string;
  practicePage: boolean;
}): string {
  const quiz = o.quizIds[0] ?? "QUIZ_ID";
  const hasQuizzes = o.quizIds.length > 0;
  return [
    "",
    `Start here: ${o.base}/ (where to go next: the API document, health, the docs)`,
    `Metrics: http://127.0.0.1:${o.scrapePort}/metrics (METRICS_PORT)`,
    `Store: ${describeStore(o.databaseUrl)}`,
    ...(o.practicePage && hasQuizzes ? practiceLinkLines(o.base, quiz, o.token) : []),
    "No JWT key configured: using a development secret (.dev-jwt-secret). Token for user 'demo':",
    `  export TOKEN=${o.token}`,
    ...(hasQuizzes
      ? [`Try it on quiz ${quiz}:`]
      : [
          "No quizzes yet. To add the two demo quizzes to this store, run in another shell:",
          `  ${seedDemoCommand(o.databaseUrl)}`,
          "(it prints the practice link). Then try it:",
        ]),
    `  curl -s -X POST -H "authorization: Bearer $TOKEN" ${o.base}/quizzes/${quiz}/sessions`,
    `  curl -s -H "authorization: Bearer $TOKEN" ${o.base}/quizzes/${quiz}/sessions`,
    "",
  ].join("\n");
}
