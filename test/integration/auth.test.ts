import { generateKeyPairSync } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { SignJWT, UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOKEN_HINT } from "../../src/demo-hints.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, TEST_SECRET, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

const secret = new TextEncoder().encode(TEST_SECRET);
const EXPIRED_CHALLENGE =
  'Bearer error="invalid_token", error_description="bearer token expired: get a new token"';
const nowS = () => Math.floor(svc.clock.now().getTime() / 1000);
const sign = (jwt: SignJWT, key: Uint8Array = secret) =>
  jwt.setProtectedHeader({ alg: "HS256" }).sign(key);

/** RFC 6750's error for a call without a bearer token to look at, and for one that fails. */
const REQUEST = "invalid_request";
const TOKEN = "invalid_token";

const badTokens: [string, () => Promise<string | null>, string, RegExp][] = [
  [
    "no header",
    async () => null,
    REQUEST,
    /^no bearer token: send the header authorization: Bearer <token>$/,
  ],
  ["an empty bearer", async () => "Bearer ", REQUEST, /^no bearer token: /],
  [
    "a non-bearer scheme",
    async () => `Basic ${Buffer.from("a:b").toString("base64")}`,
    REQUEST,
    /^the authorization header is not a bearer token: send authorization: Bearer <token>$/,
  ],
  [
    "a token without Bearer",
    async () => "eyJhbGciOiJIUzI1NiJ9.e30.c2ln",
    REQUEST,
    /not a bearer token/,
  ],
  ["Bearer abc", async () => "Bearer abc", TOKEN, /^bearer token is not a JWT \(/],
  ["garbage", async () => "Bearer not.a.jwt", TOKEN, /^bearer token is not a JWT \(/],
  [
    "alg none",
    async () =>
      `Bearer ${new UnsecuredJWT({ sub: "mallory" }).setExpirationTime(nowS() + 60).encode()}`,
    TOKEN,
    /^bearer token is signed with an algorithm this service does not accept$/,
  ],
  [
    "a wrong secret",
    async () =>
      `Bearer ${await sign(new SignJWT({ sub: "mallory" }).setExpirationTime(nowS() + 60), new TextEncoder().encode("x".repeat(40)))}`,
    TOKEN,
    /^bearer token's signature does not verify: signed with another key, or altered$/,
  ],
  [
    "a signature cut off",
    async () => {
      const token = await sign(new SignJWT({ sub: "u" }).setExpirationTime(nowS() + 60));
      return `Bearer ${token.slice(0, token.lastIndexOf(".") + 1)}`;
    },
    TOKEN,
    /^bearer token's signature does not verify/,
  ],
  [
    "a signature and its dot cut off",
    async () => {
      const token = await sign(new SignJWT({ sub: "u" }).setExpirationTime(nowS() + 60));
      return `Bearer ${token.slice(0, token.lastIndexOf("."))}`;
    },
    TOKEN,
    /^bearer token is not a JWT/,
  ],
  [
    "an expired token",
    async () => `Bearer ${await sign(new SignJWT({ sub: "u" }).setExpirationTime(nowS() - 1))}`,
    TOKEN,
    /^bearer token expired: get a new token$/,
  ],
  [
    "a not-yet-valid token",
    async () =>
      `Bearer ${await sign(new SignJWT({ sub: "u" }).setNotBefore(nowS() + 600).setExpirationTime(nowS() + 900))}`,
    TOKEN,
    /^bearer token is not valid yet: /,
  ],
  [
    "a token issued more than 60 s ahead (iat alone)",
    async () =>
      `Bearer ${await sign(new SignJWT({ sub: "u" }).setIssuedAt(nowS() + 120).setExpirationTime(nowS() + 900))}`,
    TOKEN,
    /^bearer token is not valid yet: /,
  ],
  [
    "no sub",
    async () => `Bearer ${await sign(new SignJWT({}).setExpirationTime(nowS() + 60))}`,
    TOKEN,
    /^bearer token has no sub claim/,
  ],
  [
    "no exp",
    async () => `Bearer ${await sign(new SignJWT({ sub: "u" }))}`,
    TOKEN,
    /^bearer token has no exp claim/,
  ],
  [
    "an empty sub",
    async () => `Bearer ${await sign(new SignJWT({ sub: "" }).setExpirationTime(nowS() + 60))}`,
    TOKEN,
    /^bearer token's sub is not a user id/,
  ],
  [
    "an RS256 token",
    async () => {
      const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
      return `Bearer ${await new SignJWT({ sub: "u" })
        .setExpirationTime(nowS() + 60)
        .setProtectedHeader({ alg: "RS256" })
        .sign(privateKey)}`;
    },
    TOKEN,
    /^bearer token is signed with an algorithm this service does not accept$/,
  ],
  ["a huge header", async () => `Bearer ${"a".repeat(9000)}`, TOKEN, /^bearer token is too long/],
];

/** What a refusal said on one transport: its message, and its RFC 6750 challenge. */
interface Said {
  transport: string;
  message: string;
  challenge: string | null;
}

/** Sends `headers` on REST (GET, and POST under /api), gRPC, gRPC-Web and Connect. */
async function refusedEverywhere(headers: Record<string, string>): Promise<Said[]> {
  const said: Said[] = [];
  for (const [method, path] of [
    ["GET", `/quizzes/${quiz.quizId}/sessions`],
    ["POST", `/api/quizzes/${quiz.quizId}/sessions`],
  ] as const) {
    const res = await svc.rest(null, method, path, { headers });
    expect(res.status).toBe(401);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    const body = (await res.json()) as { code: string; detail: string; status: number };
    expect(body).toMatchObject({ status: 401, code: "unauthenticated" });
    said.push({
      transport: `rest ${method}`,
      message: body.detail,
      challenge: res.headers.get("www-authenticate"),
    });
  }
  const grpc = (await svc.grpc.startSession({ quizId: quiz.quizId }, headers).catch((e) => e)) as {
    code: number;
    details: string;
    metadata: { get(name: string): unknown[] };
  };
  expect(grpc.code).toBe(16);
  said.push({
    transport: "grpc",
    message: grpc.details,
    challenge: String(grpc.metadata.get("www-authenticate")[0] ?? null),
  });
  for (const [transport, client] of [
    ["grpc-web", svc.grpcWeb],
    ["connect", svc.connect],
  ] as const) {
    const err = ConnectError.from(
      await client.listSessions({ quizId: quiz.quizId }, { headers }).catch((e) => e),
    );
    expect(err.code).toBe(Code.Unauthenticated);
    said.push({
      transport,
      message: err.rawMessage,
      challenge: err.metadata.get("www-authenticate"),
    });
  }
  return said;
}

describe("authentication", () => {
  it.each(badTokens)(
    "refuses %s, saying why in the same words on every transport, with RFC 6750's challenge",
    async (_name, make, error, words) => {
      const authorization = await make();
      const headers: Record<string, string> = authorization === null ? {} : { authorization };
      const said = await refusedEverywhere(headers);
      const message = said[0]?.message ?? "";
      expect(message).toMatch(words);
      for (const s of said) {
        expect(s).toEqual({
          transport: s.transport,
          message,
          challenge: `Bearer error="${error}", error_description="${message}"`,
        });
      }
      // No token text in what is said: none of its parts, nor the secret.
      for (const part of authorization?.split(/[ .]/) ?? []) {
        if (part.length >= 8) expect(message).not.toContain(part);
      }
      expect(message).not.toContain(TEST_SECRET);
    },
  );

  it("tells each problem apart: only the same problem gets the same words", async () => {
    const byWords = new Map<string, string[]>();
    for (const [name, make] of badTokens) {
      const authorization = await make();
      const res = await svc.rest(null, "GET", `/quizzes/${quiz.quizId}`, {
        headers: authorization === null ? {} : { authorization },
      });
      const { detail } = (await res.json()) as { detail: string };
      byWords.set(detail, [...(byWords.get(detail) ?? []), name]);
    }
    expect([...byWords.values()].filter((names) => names.length > 1)).toEqual([
      ["no header", "an empty bearer"],
      ["a non-bearer scheme", "a token without Bearer"],
      ["Bearer abc", "garbage", "a signature and its dot cut off"],
      ["alg none", "an RS256 token"],
      ["a wrong secret", "a signature cut off"],
      ["a not-yet-valid token", "a token issued more than 60 s ahead (iat alone)"],
    ]);
    expect(byWords.size).toBe(11);
  });

  it("in development, every refusal says how to get a token", async () => {
    const dev = await startTestService({ tokenHint: TOKEN_HINT });
    try {
      const res = await dev.rest(null, "GET", `/quizzes/${quiz.quizId}/sessions`);
      const { detail } = (await res.json()) as { detail: string };
      expect(detail).toBe(
        "no bearer token: send the header authorization: Bearer <token>; in development, `npm run -s token -- alice` prints one",
      );
      expect(res.headers.get("www-authenticate")).toBe(
        `Bearer error="invalid_request", error_description="${detail}"`,
      );
    } finally {
      await dev.close();
    }
  });

  it("answers 401 before 404: an unauthenticated caller learns nothing about quizzes", async () => {
    const res = await svc.rest(null, "GET", "/quizzes/987654/sessions");
    expect(res.status).toBe(401);
  });

  it("says an expired token expired: RFC 6750 challenge on REST, a clear message on gRPC and Connect", async () => {
    const token = await sign(new SignJWT({ sub: "late" }).setExpirationTime(nowS() - 1));
    const headers = { authorization: `Bearer ${token}` };
    for (const path of [`/quizzes/${quiz.quizId}`, `/api/quizzes/${quiz.quizId}/sessions`]) {
      const res = await svc.rest(null, "GET", path, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe(EXPIRED_CHALLENGE);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await res.json()).toMatchObject({
        status: 401,
        code: "unauthenticated",
        detail: expect.stringMatching(/expired/),
      });
    }
    await expect(svc.grpc.listSessions({ quizId: quiz.quizId }, headers)).rejects.toMatchObject({
      code: 16,
      details: expect.stringMatching(/token expired/),
    });
    await expect(svc.quizGrpc.getQuiz({ quizId: quiz.quizId }, headers)).rejects.toMatchObject({
      code: 16,
      details: expect.stringMatching(/token expired/),
    });
    const err = await svc.connect
      .listSessions({ quizId: quiz.quizId }, { headers })
      .catch((e) => e);
    expect(ConnectError.from(err)).toMatchObject({
      code: Code.Unauthenticated,
      rawMessage: expect.stringMatching(/token expired/),
    });
    // A forged token past its exp is not called expired: only an authentic one is.
    const forged = await sign(
      new SignJWT({ sub: "late" }).setExpirationTime(nowS() - 1),
      new TextEncoder().encode("y".repeat(40)),
    );
    const res = await svc.rest(null, "GET", `/quizzes/${quiz.quizId}`, {
      headers: { authorization: `Bearer ${forged}` },
    });
    expect(res.headers.get("www-authenticate")).toMatch(/signature does not verify/);
  });

  it("stops accepting a cached token once it expires", async () => {
    const token = await sign(new SignJWT({ sub: "expiring" }).setExpirationTime(nowS() + 60));
    const headers = { authorization: `Bearer ${token}` };
    expect(
      (await svc.rest(null, "GET", `/quizzes/${quiz.quizId}/sessions`, { headers })).status,
    ).toBe(200);
    svc.clock.advance(61_000);
    const late = await svc.rest(null, "GET", `/quizzes/${quiz.quizId}/sessions`, { headers });
    expect(late.status).toBe(401);
    expect(late.headers.get("www-authenticate")).toBe(EXPIRED_CHALLENGE);
    await expect(svc.grpc.listSessions({ quizId: quiz.quizId }, headers)).rejects.toMatchObject({
      code: 16,
    });
  });
});
