import { createPublicKey, type KeyObject } from "node:crypto";
import { ConnectError } from "@connectrpc/connect";
import { createRemoteJWKSet, type JWTVerifyGetKey, jwtVerify } from "jose";
import { errors } from "../app/errors.js";
import type { JwtConfig } from "../config.js";
import type { Clock } from "../domain/clock.js";

/** Turns an `authorization` header value into the caller's user id. */
export interface Authenticator {
  /** The token's `sub`, or throws `unauthenticated`. */
  authenticate(authorization: string | null | undefined): Promise<string>;
}

/** Longest `authorization` value looked at; longer ones are refused unread. */
const MAX_HEADER_LENGTH = 8192;
/** Longest user id, in code points: practice_sessions.user_id is VARCHAR(255) in utf8mb4. */
export const MAX_SUBJECT_LENGTH = 255;
/** Verified tokens remembered at most. */
const CACHE_SIZE = 10_000;

type Key = Uint8Array | KeyObject | JWTVerifyGetKey;

/**
 * Verifies `Bearer` JWTs with jose (HS256 secret, or RS256/ES256 PEM key or
 * JWKS URL); `alg: none`, a mismatched algorithm, a bad signature, bad times,
 * issuer or audience, and a missing `exp` or `sub` are refused. Verification
 * dominates a request's CPU, so verified tokens are cached (bounded, until
 * `exp`); expiry is still checked on each use.
 */
export function createAuthenticator(config: JwtConfig, clock: Clock): Authenticator {
  const { key, algorithms } = verificationKey(config);
  const verified = new Map<string, { sub: string; exp: number }>();
  const pending = new Map<string, Promise<{ sub: string; exp: number }>>();

  async function verify(token: string) {
    const { payload } = await jwtVerify(token, key as Uint8Array, {
      algorithms,
      issuer: config.issuer,
      audience: config.audience,
      requiredClaims: ["exp", "sub"],
      currentDate: clock.now(),
    });
    const { sub, exp } = payload;
    if (typeof sub !== "string" || !isUserId(sub)) throw new Error("bad sub");
    if (CONTROL.test(sub)) throw errors.subjectNotAccepted();
    return { sub, exp: exp as number };
  }

  return {
    async authenticate(authorization) {
      if (!authorization || authorization.length > MAX_HEADER_LENGTH)
        throw errors.unauthenticated();
      const match = /^Bearer +([A-Za-z0-9_.-]+) *$/i.exec(authorization);
      const token = match?.[1];
      if (token === undefined) throw errors.unauthenticated();
      const nowSeconds = clock.now().getTime() / 1000;
      const cached = verified.get(token);
      if (cached !== undefined && cached.exp > nowSeconds) return cached.sub;
      if (cached !== undefined) {
        // It was verified, so it is authentic: say that it expired.
        verified.delete(token);
        throw errors.tokenExpired();
      }
      try {
        // Calls with one token at once (a client's many streams) wait for one verification.
        let verifying = pending.get(token);
        if (verifying === undefined) {
          verifying = verify(token)
            .then((claims) => {
              if (verified.size >= CACHE_SIZE) {
                // Maps iterate in insertion order: drop the oldest entry.
                const oldest = verified.keys().next().value;
                if (oldest !== undefined) verified.delete(oldest);
              }
              verified.set(token, claims);
              return claims;
            })
            .finally(() => pending.delete(token));
          pending.set(token, verifying);
        }
        return (await verifying).sub;
      } catch (err) {
        // jose checks the signature before the claims: only an authentic
        // token is ever reported as expired.
        if ((err as { code?: unknown }).code === "ERR_JWT_EXPIRED") throw errors.tokenExpired();
        if (err instanceof ConnectError) throw err;
        throw errors.unauthenticated();
      }
    },
  };
}

function verificationKey(config: JwtConfig): { key: Key; algorithms: string[] } {
  if (config.secret !== undefined) {
    return { key: new TextEncoder().encode(config.secret), algorithms: ["HS256"] };
  }
  if (config.publicKeyPem !== undefined) {
    const key = createPublicKey(config.publicKeyPem);
    return { key, algorithms: key.asymmetricKeyType === "ec" ? ["ES256"] : ["RS256"] };
  }
  if (config.jwksUrl !== undefined) {
    return { key: createRemoteJWKSet(new URL(config.jwksUrl)), algorithms: ["RS256", "ES256"] };
  }
  throw new Error("no JWT key configured");
}

/**
 * C0 and C1 controls and DEL (Cc), and the bidi controls (U+202E and the
 * like): a consumer reading C strings stops at a NUL, and a bidi override
 * shows one user id as another.
 */
const CONTROL = /[\p{Cc}\p{Bidi_Control}]/u;

/** With the u flag, only a surrogate that is not half of a pair is a code point of category Cs. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Whether a `sub` can be a user id: 1 to MAX_SUBJECT_LENGTH code points of
 * well-formed Unicode. Lone surrogates would become U+FFFD in utf8mb4 and merge
 * different subjects into one user.
 */
export function isUserId(sub: string): boolean {
  if (sub.length === 0 || LONE_SURROGATE.test(sub)) return false;
  let codePoints = 0;
  for (const _ of sub) if (++codePoints > MAX_SUBJECT_LENGTH) return false;
  return true;
}
