import type { ConnectError } from "@connectrpc/connect";
import { errors } from "../app/errors.js";
import { IAT_LEEWAY_SECONDS, MAX_HEADER_LENGTH, MAX_SUBJECT_LENGTH } from "./token-limits.js";

/**
 * Why a credential is refused, each with RFC 6750's error code and the words
 * that say it (`detail`, the gRPC and Connect message, and the challenge's
 * `error_description`): fixed strings, never the token, a key or the secret.
 * `invalid_request` when there is no bearer token to look at, `invalid_token`
 * when there is one and it fails.
 */
const REFUSALS = {
  missing: ["invalid_request", "no bearer token: send the header authorization: Bearer <token>"],
  scheme: [
    "invalid_request",
    "the authorization header is not a bearer token: send authorization: Bearer <token>",
  ],
  tooLong: [
    "invalid_token",
    `bearer token is too long (more than ${MAX_HEADER_LENGTH} characters)`,
  ],
  notJwt: [
    "invalid_token",
    "bearer token is not a JWT (a signed JWS: three base64url parts joined by dots)",
  ],
  claims: [
    "invalid_token",
    "bearer token's claims are malformed (not a JSON object, or a claim of the wrong type)",
  ],
  algorithm: [
    "invalid_token",
    "bearer token is signed with an algorithm this service does not accept",
  ],
  unsupported: [
    "invalid_token",
    "bearer token's header asks for what this service does not support (a crit extension)",
  ],
  signature: [
    "invalid_token",
    "bearer token's signature does not verify: signed with another key, or altered",
  ],
  unknownKey: ["invalid_token", "bearer token's key (kid) is not one of the service's keys"],
  expired: ["invalid_token", "bearer token expired: get a new token"],
  notYetValid: [
    "invalid_token",
    `bearer token is not valid yet: its nbf, or its iat more than ${IAT_LEEWAY_SECONDS} s ahead, is in the future`,
  ],
  issuer: ["invalid_token", "bearer token's issuer (iss) is not the one this service accepts"],
  audience: ["invalid_token", "bearer token's audience (aud) is not this service"],
  noExp: ["invalid_token", "bearer token has no exp claim: it must expire"],
  noSub: ["invalid_token", "bearer token has no sub claim: it names no user"],
  subject: [
    "invalid_token",
    `bearer token's sub is not a user id (1 to ${MAX_SUBJECT_LENGTH} characters of well-formed Unicode)`,
  ],
  control: [
    "invalid_token",
    "bearer token's sub holds a control character (C0, C1 or a bidi control): not a user id",
  ],
  unverifiable: ["invalid_token", "bearer token could not be verified"],
} as const satisfies Record<string, readonly [ChallengeError, string]>;

/** RFC 6750's error codes of a refused bearer token. */
type ChallengeError = "invalid_request" | "invalid_token";

export type RefusalReason = keyof typeof REFUSALS;

/**
 * The refusal of each reason, as a maker of `unauthenticated` errors; with
 * `hint` (development: how to get a token) added to every description.
 */
export function refusals(hint?: string): (reason: RefusalReason) => ConnectError {
  return (reason) => {
    const [code, text] = REFUSALS[reason];
    return errors.tokenRefused(code, hint === undefined ? text : `${text}; ${hint}`);
  };
}

/** jose's claim names, as its ERR_JWT_CLAIM_VALIDATION_FAILED errors give them. */
const CLAIMS: Record<string, Record<string, RefusalReason>> = {
  nbf: { check_failed: "notYetValid" },
  iss: { check_failed: "issuer", missing: "issuer" },
  aud: { check_failed: "audience", missing: "audience" },
  exp: { missing: "noExp" },
  sub: { missing: "noSub" },
};

/**
 * Why jose refused a token, from its error's `code` (and `claim`, `reason`).
 * jose checks the signature before the claims: only an authentic token is
 * ever said to be expired, not yet valid, or for another issuer or audience.
 */
export function refusalOfJose(err: unknown): RefusalReason {
  const { code, claim, reason } = err as { code?: unknown; claim?: unknown; reason?: unknown };
  switch (code) {
    case "ERR_JWS_INVALID":
      return "notJwt";
    case "ERR_JWT_INVALID":
      return "claims";
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return "algorithm";
    case "ERR_JOSE_NOT_SUPPORTED":
      return "unsupported";
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return "signature";
    case "ERR_JWKS_NO_MATCHING_KEY":
      return "unknownKey";
    case "ERR_JWT_EXPIRED":
      return "expired";
    case "ERR_JWT_CLAIM_VALIDATION_FAILED":
      return CLAIMS[String(claim)]?.[String(reason)] ?? "claims";
    default:
      return "unverifiable";
  }
}
