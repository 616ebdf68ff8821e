/**
 * Prints an HS256 token for the user given as argument (default "demo"),
 * signed with JWT_SECRET, or with the development secret when none is set.
 *   npm run token -- alice
 */
import { devSecret, signToken } from "../src/auth/tokens.js";
import { loadConfig } from "../src/config.js";

const config = loadConfig();
if (config.jwt.publicKeyPem || config.jwt.jwksUrl) {
  console.error("JWT_PUBLIC_KEY / JWT_JWKS_URL are set: sign tokens with your identity provider");
  process.exit(2);
}
const sub = process.argv[2] ?? "demo";
const token = await signToken(config.jwt.secret ?? devSecret(), sub, {
  issuer: config.jwt.issuer,
  audience: config.jwt.audience,
  ttlSeconds: 30 * 86_400,
});
console.log(token);
