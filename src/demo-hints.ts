import { signToken } from "./auth/tokens.js";
import { type Config, DEFAULT_DATABASE_URL } from "./config.js";
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
