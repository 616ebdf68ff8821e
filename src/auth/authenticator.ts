import { createPublicKey, type KeyObject } from "node:crypto";
import { createRemoteJWKSet, type JWTVerifyGetKey, jwtVerify } from "jose";
import type { JwtConfig } from "../config.js";
import type { Clock } from "../domain/clock.js";
import { type RefusalReason, refusalOfJose, refusals } from "./refusals.js";
import { IAT_LEEWAY_SECONDS, MAX_HEADER_LENGTH, MAX_SUBJECT_LENGTH } from "./token-limits.js";

/** Turns an `authorization` header value into the caller's user id. */
export interface Authenticator {
  /** The token's `sub`, or throws `unauthenticated`. */
  authenticate(authorization: string | null | undefined): Promise<string>;
}

/** Verified tokens remembered at most. */
const CACHE_SIZE = 10_000;

type Key = Uint8Array | KeyObject | JWTVerifyGetKey;

export interface AuthenticatorOptions {
  /** Added to every refusal's words: how to get a token (development). */
  hint?: string;
}

/** A refusal for a reason of its own (refusals.ts), thrown inside verification. */
class Refused extends Error {
  constructor(readonly reason: RefusalReason) {
    super(reason);
  }
}

/**
 * Verifies `Bearer` JWTs with jose (HS256 secret, or RS256/ES256 PEM key or
 * JWKS URL); `alg: none`, a mismatched algorithm, a bad signature, bad times
 * (an `iat` more than 60 s ahead too), issuer or audience, and a missing
 * `exp` or `sub` are refused, each with its reason (refusals.ts).
 * Verification dominates a request's CPU, so verified tokens are cached
 * (bounded, until `exp`); expiry is still checked on each use.
 */
export function createAuthenticator(
  config: JwtConfig,
  clock: Clock,
  options: AuthenticatorOptions = {},
): Authenticator {
  const { key, algorithms } = verificationKey(config);
  const refusal = refusals(options.hint);
  const verified = new Map<string, { sub: string; exp: number }>();
  const pending = new Map<string, Promise<{ sub: string; exp: number }>>();

  async function verify(token: string) {
    const now = clock.now();
    const { payload } = await jwtVerify(token, key as Uint8Array, {
      algorithms,
      issuer: config.issuer,
      audience: config.audience,
      requiredClaims: ["exp", "sub"],
      currentDate: now,
    });
    const { sub, exp, iat } = payload;
    if (typeof iat === "number" && iat > now.getTime() / 1000 + IAT_LEEWAY_SECONDS) {
      throw new Refused("notYetValid");
    }
    if (typeof sub !== "string" || !isUserId(sub)) throw new Refused("subject");
    if (CONTROL.test(sub)) throw new Refused("control");
    return { sub, exp: exp as number };
  }

  return {
    async authenticate(authorization) {
      if (!authorization) throw refusal("missing");
      if (authorization.length > MAX_HEADER_LENGTH) throw refusal("tooLong");
      // RFC 7235: the scheme's name is case-insensitive.
      if (!/^bearer(?: |$)/i.test(authorization)) throw refusal("scheme");
      const token = authorization.slice("bearer".length).trim();
      if (token === "") throw refusal("missing");
      if (!JWS_CHARACTERS.test(token)) throw refusal("notJwt");
      const nowSeconds = clock.now().getTime() / 1000;
      const cached = verified.get(token);
      if (cached !== undefined && cached.exp > nowSeconds) return cached.sub;
      if (cached !== undefined) {
        // It was verified, so it is authentic: say that it expired.
        verified.delete(token);
        throw refusal("expired");
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
        throw refusal(err instanceof Refused ? err.reason : refusalOfJose(err));
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

/** What a compact JWS is written with: base64url parts joined by dots. */
const JWS_CHARACTERS = /^[A-Za-z0-9_.-]+$/;

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
