/**
 * Prints an HS256 token for the user given as argument (default "demo"),
 * signed with JWT_SECRET, or with the development secret when none is set.
 *   npm run token -- alice
 */
// First: refuses a Node too old before anything native loads.
import "../src/ops/node-version.js";
import { isUserId } from "../src/auth/authenticator.js";
import { MAX_SUBJECT_LENGTH } from "../src/auth/token-limits.js";
import { devSecret, signToken } from "../src/auth/tokens.js";
import { loadConfig } from "../src/config.js";
import { runEntry, StartupError } from "../src/ops/startup-errors.js";

const USAGE = "usage: npm run token -- [USER_ID] (default demo)";

runEntry(async () => {
  const config = loadConfig();
  if (config.jwt.publicKeyPem || config.jwt.jwksUrl) {
    throw new StartupError(
      "JWT_PUBLIC_KEY / JWT_JWKS_URL are set: sign tokens with your identity provider",
    );
  }
  const args = process.argv.slice(2);
  if (args.length > 1) throw new StartupError(`one user id at most; ${USAGE}`);
  const sub = args[0] ?? "demo";
  // The service would refuse a token for it: say so now.
  if (!isUserId(sub)) {
    throw new StartupError(`the user id must be 1-${MAX_SUBJECT_LENGTH} characters; ${USAGE}`);
  }
  const token = await signToken(config.jwt.secret ?? devSecret(), sub, {
    issuer: config.jwt.issuer,
    audience: config.jwt.audience,
    ttlSeconds: 30 * 86_400,
  });
  console.log(token);
});
