import { createHmac, createSign, generateKeyPairSync, type KeyObject } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { exportJWK, SignJWT, UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { reportFigures } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * A service that verifies RS256 tokens with a public key and requires an
 * issuer and an audience: the configuration where algorithm confusion
 * (HS256 signed with the public key) is possible if the verifier lets it.
 */
const ISSUER = "https://idp.example";
const AUDIENCE = "practice-sessions";
const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const publicKeyPem = publicKey.export({ type: "spki", format: "pem" }).toString();
const other = generateKeyPairSync("rsa", { modulusLength: 2048 });

let svc: TestService;
let quiz: QuizFixture;

beforeAll(async () => {
  svc = await startTestService({
    auth: {
      config: { publicKeyPem, issuer: ISSUER, audience: AUDIENCE },
      sign: (sub, now) => rs256({ sub }, now),
    },
  });
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

const nowS = () => Math.floor(svc.clock.now().getTime() / 1000);
const b64 = (value: unknown) =>
  Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");

/** A correctly signed RS256 token with the right issuer and audience, plus `claims`. */
function rs256(
  claims: Record<string, unknown>,
  now = svc.clock.now(),
  key: KeyObject = privateKey,
) {
  const iat = Math.floor(now.getTime() / 1000);
  return new SignJWT({ iss: ISSUER, aud: AUDIENCE, iat, exp: iat + 300, ...claims })
    .setProtectedHeader({ alg: "RS256", typ: "JWT" })
    .sign(key);
}

/** A token put together by hand: any header, any payload, any signature. */
function forge(
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  sign: (input: string) => string,
) {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${sign(input)}`;
}

const goodClaims = () => ({ sub: "mallory", iss: ISSUER, aud: AUDIENCE, exp: nowS() + 300 });
const hmac = (secret: string | Buffer) => (input: string) =>
  createHmac("sha256", secret).update(input).digest("base64url");
const rsa = (alg: string, key: KeyObject) => (input: string) =>
  createSign(alg).update(input).sign(key).toString("base64url");

/** What each kind of refusal says (detail, gRPC and Connect message, error_description). */
const SAID = {
  algorithm: "bearer token is signed with an algorithm this service does not accept",
  signature: "bearer token's signature does not verify: signed with another key, or altered",
  unsupported:
    "bearer token's header asks for what this service does not support (a crit extension)",
  expired: "bearer token expired: get a new token",
  notYetValid:
    "bearer token is not valid yet: its nbf, or its iat more than 60 s ahead, is in the future",
  issuer: "bearer token's issuer (iss) is not the one this service accepts",
  audience: "bearer token's audience (aud) is not this service",
  noSub: "bearer token has no sub claim: it names no user",
  noExp: "bearer token has no exp claim: it must expire",
  subject: "bearer token's sub is not a user id (1 to 255 characters of well-formed Unicode)",
  claims: "bearer token's claims are malformed (not a JSON object, or a claim of the wrong type)",
  tooLong: "bearer token is too long (more than 8192 characters)",
  notJwt: "bearer token is not a JWT (a signed JWS: three base64url parts joined by dots)",
} as const;

const hostile: [string, () => Promise<string>, keyof typeof SAID][] = [
  [
    "alg none (jose UnsecuredJWT)",
    async () => new UnsecuredJWT(goodClaims()).encode(),
    "algorithm",
  ],
  [
    "alg None, signature dropped",
    async () => forge({ alg: "None" }, goodClaims(), () => ""),
    "algorithm",
  ],
  [
    "alg NONE, signature kept",
    async () => forge({ alg: "NONE" }, goodClaims(), rsa("RSA-SHA256", privateKey)),
    "algorithm",
  ],
  [
    "HS256 signed with the PEM public key",
    async () => forge({ alg: "HS256" }, goodClaims(), hmac(publicKeyPem)),
    "algorithm",
  ],
  [
    "HS256 signed with the DER public key",
    async () =>
      forge(
        { alg: "HS256" },
        goodClaims(),
        hmac(publicKey.export({ type: "spki", format: "der" })),
      ),
    "algorithm",
  ],
  [
    "RS256 signed with another key",
    async () => rs256({ sub: "mallory" }, svc.clock.now(), other.privateKey),
    "signature",
  ],
  [
    "RS256 signed with another key that the header embeds as jwk",
    async () => {
      const jwk = await exportJWK(other.publicKey);
      return new SignJWT(goodClaims())
        .setProtectedHeader({ alg: "RS256", jwk })
        .sign(other.privateKey);
    },
    "signature",
  ],
  [
    "RS256 with a jku pointing elsewhere, signed with another key",
    async () =>
      new SignJWT(goodClaims())
        .setProtectedHeader({ alg: "RS256", jku: "http://127.0.0.1:1/jwks", kid: "x" })
        .sign(other.privateKey),
    "signature",
  ],
  [
    "RS512 signed with the right key (algorithm not allowed)",
    async () => forge({ alg: "RS512" }, goodClaims(), rsa("RSA-SHA512", privateKey)),
    "algorithm",
  ],
  [
    "PS256 signed with the right key (algorithm not allowed)",
    async () => new SignJWT(goodClaims()).setProtectedHeader({ alg: "PS256" }).sign(privateKey),
    "algorithm",
  ],
  [
    "an unknown crit header, signed with the right key",
    async () =>
      forge(
        { alg: "RS256", crit: ["x-must"], "x-must": 1 },
        goodClaims(),
        rsa("RSA-SHA256", privateKey),
      ),
    "unsupported",
  ],
  [
    "a valid token whose payload was swapped",
    async () => {
      const [h, , s] = (await rs256({ sub: "alice" })).split(".");
      return `${h}.${b64({ ...goodClaims(), sub: "admin" })}.${s}`;
    },
    "signature",
  ],
  [
    "a valid token with one signature byte flipped",
    async () => {
      const token = await rs256({ sub: "alice" });
      const sig = Buffer.from(token.split(".")[2] ?? "", "base64url");
      sig[10] = (sig[10] ?? 0) ^ 1;
      return `${token.split(".").slice(0, 2).join(".")}.${sig.toString("base64url")}`;
    },
    "signature",
  ],
  ["expired", async () => rs256({ sub: "u", exp: nowS() - 1 }), "expired"],
  ["not yet valid", async () => rs256({ sub: "u", nbf: nowS() + 3600 }), "notYetValid"],
  [
    "issued in the future (iat alone, an hour ahead)",
    async () => rs256({ sub: "u", iat: nowS() + 3600 }),
    "notYetValid",
  ],
  ["a wrong issuer", async () => rs256({ sub: "u", iss: "https://evil.example" }), "issuer"],
  ["no issuer", async () => rs256({ sub: "u", iss: undefined }), "issuer"],
  ["a wrong audience", async () => rs256({ sub: "u", aud: "other-service" }), "audience"],
  ["no audience", async () => rs256({ sub: "u", aud: undefined }), "audience"],
  ["no sub", async () => rs256({}), "noSub"],
  ["an empty sub", async () => rs256({ sub: "" }), "subject"],
  ["a numeric sub", async () => rs256({ sub: 42 }), "subject"],
  ["a sub of 256 characters", async () => rs256({ sub: "s".repeat(256) }), "subject"],
  [
    "a sub of 256 code points (emoji)",
    async () => rs256({ sub: "\u{1F600}".repeat(256) }),
    "subject",
  ],
  // JSON allows lone surrogates; utf8mb4 stores each as U+FFFD, so all of
  // these would be one user in the database.
  ["a sub that is a lone high surrogate", async () => rs256({ sub: "\ud800" }), "subject"],
  ["a sub that is a lone low surrogate", async () => rs256({ sub: "\udc00" }), "subject"],
  ["a sub with a lone surrogate inside", async () => rs256({ sub: "alice\udfff" }), "subject"],
  ["no exp", async () => rs256({ sub: "u", exp: undefined }), "noExp"],
  ["a string exp", async () => rs256({ sub: "u", exp: String(nowS() + 300) }), "claims"],
  [
    "an oversized but correctly signed token (10 KiB)",
    async () => rs256({ sub: "u", pad: "p".repeat(10_000) }),
    "tooLong",
  ],
  ["garbage", async () => "not.a.jwt", "notJwt"],
  ["three empty segments", async () => "..", "notJwt"],
  ["a JWE-shaped five-part token", async () => "a.b.c.d.e", "notJwt"],
  [
    "base64 of JSON without signature",
    async () => `${b64({ alg: "RS256" })}.${b64(goodClaims())}`,
    "notJwt",
  ],
  ["a header that is not JSON", async () => `${b64("{alg")}.${b64(goodClaims())}.sig`, "notJwt"],
];

/** Sends `authorization` on REST GET/POST, Connect, and gRPC; returns what each said. */
async function tryEverywhere(authorization: string) {
  const headers = { authorization };
  const out: string[] = [];
  for (const [method, path] of [
    ["GET", `/quizzes/${quiz.quizId}/sessions`],
    ["POST", `/api/quizzes/${quiz.quizId}/sessions`],
  ] as const) {
    const res = await svc.rest(null, method, path, { headers });
    const body = (await res.json()) as { code?: string; detail?: string };
    const wwwAuth = res.headers.get("www-authenticate");
    out.push(
      `rest ${res.status} ${body.code} ${res.headers.get("content-type")} ${wwwAuth} ${body.detail}`,
    );
  }
  for (const call of [svc.grpc.startSession, svc.grpc.listSessions]) {
    const grpc = await call({ quizId: quiz.quizId }, headers).then(
      () => "0",
      (e: { code: number; details: string; metadata: { get(name: string): unknown[] } }) =>
        `${e.code} ${e.metadata.get("www-authenticate")[0]} ${e.details}`,
    );
    out.push(`grpc ${grpc}`);
  }
  const connect = await svc.connect.listSessions({ quizId: quiz.quizId }, { headers }).then(
    () => Code[0] ?? "ok",
    (e) => {
      const err = ConnectError.from(e);
      return `${Code[err.code]} ${err.metadata.get("www-authenticate")} ${err.rawMessage}`;
    },
  );
  out.push(`connect ${connect}`);
  return out;
}

/** What every transport says of a token refused for `reason`: 401 / 16 / Unauthenticated, the challenge and the words. */
function refused(reason: keyof typeof SAID): string[] {
  const words = SAID[reason];
  const challenge = `Bearer error="invalid_token", error_description="${words}"`;
  const rest = `rest 401 unauthenticated application/problem+json; charset=utf-8 ${challenge} ${words}`;
  return [
    rest,
    rest,
    `grpc 16 ${challenge} ${words}`,
    `grpc 16 ${challenge} ${words}`,
    `connect Unauthenticated ${challenge} ${words}`,
  ];
}

describe("hostile tokens against an RS256 service with issuer and audience", () => {
  it("accepts a correct token (the control)", async () => {
    const token = await svc.token("alice");
    const res = await svc.rest(null, "GET", `/quizzes/${quiz.quizId}/sessions`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(200);
    // The hand-made tokens below differ from this one only by what they name.
    const forged = forge({ alg: "RS256" }, goodClaims(), rsa("RSA-SHA256", privateKey));
    expect((await tryEverywhere(`Bearer ${forged}`))[0]).toMatch(/^rest 200/);
    expect(
      (await svc.grpc.listSessions({ quizId: quiz.quizId }, { authorization: `Bearer ${token}` }))
        .sessions,
    ).toEqual([]);
  });

  it.each(hostile)(
    "refuses %s: 401 on REST, unauthenticated on gRPC and Connect, saying why",
    async (_name, make, reason) => {
      expect(await tryEverywhere(`Bearer ${await make()}`)).toEqual(refused(reason));
    },
  );

  it("takes an iat up to 60 s ahead: another machine's clock may be that far ahead", async () => {
    const token = await rs256({ sub: "ahead", iat: nowS() + 55 });
    expect((await tryEverywhere(`Bearer ${token}`))[0]).toMatch(/^rest 200/);
  });

  it("counts a sub's length in code points: 255 emoji are one valid user id", async () => {
    const token = await rs256({ sub: "\u{1F600}".repeat(255) });
    expect((await tryEverywhere(`Bearer ${token}`))[0]).toMatch(/^rest 200/);
  });

  it("refuses a token that was valid and cached once it is tampered with or expires", async () => {
    const token = await rs256({ sub: "cached", exp: nowS() + 30 });
    expect((await tryEverywhere(`Bearer ${token}`))[0]).toMatch(/^rest 200/);
    const [h, p, s] = token.split(".");
    expect(await tryEverywhere(`Bearer ${h}.${p}.${s?.slice(0, -2)}`)).toEqual(
      refused("signature"),
    );
    expect(await tryEverywhere(`Bearer ${h}.${p}.`)).toEqual(refused("signature"));
    svc.clock.advance(31_000);
    expect(await tryEverywhere(`Bearer ${token}`)).toEqual(refused("expired"));
    reportFigures("hostile tokens", {
      tokens: hostile.length + 3,
      callsEach: refused("expired").length,
      all: "refused",
    });
  });
});
