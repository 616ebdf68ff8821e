import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { SignJWT } from "jose";

/** Where a development secret is kept between runs, so printed tokens stay valid. */
const DEV_SECRET_FILE = ".dev-jwt-secret";

/**
 * The development HS256 secret: read from DEV_SECRET_FILE, or made and saved
 * there on first use. Only used when no JWT key is configured outside production.
 */
export function devSecret(file = DEV_SECRET_FILE): string {
  try {
    const secret = readFileSync(file, "utf8").trim();
    if (secret.length >= 32) return secret;
  } catch {
    // No secret yet: make one below.
  }
  const secret = randomBytes(32).toString("base64url");
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

export interface TokenOptions {
  issuer?: string;
  audience?: string;
  /** Lifetime in seconds; default one day. */
  ttlSeconds?: number;
  now?: Date;
}

/** Signs an HS256 token for user `sub`. */
export async function signToken(secret: string, sub: string, options: TokenOptions = {}) {
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  let jwt = new SignJWT({})
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(sub)
    .setIssuedAt(now)
    .setExpirationTime(now + (options.ttlSeconds ?? 86_400));
  if (options.issuer !== undefined) jwt = jwt.setIssuer(options.issuer);
  if (options.audience !== undefined) jwt = jwt.setAudience(options.audience);
  return jwt.sign(new TextEncoder().encode(secret));
}
