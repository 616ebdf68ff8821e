import { generateKeyPairSync } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import { SignJWT, UnsecuredJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOKEN_EXPIRED_CHALLENGE } from "../../src/app/errors.js";
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
const nowS = () => Math.floor(svc.clock.now().getTime() / 1000);
const sign = (jwt: SignJWT, key: Uint8Array = secret) =>
  jwt.setProtectedHeader({ alg: "HS256" }).sign(key);

const badTokens: [string, () => Promise<string | null>][] = [
  ["no header", async () => null],
  ["an empty bearer", async () => "Bearer "],
  ["a non-bearer scheme", async () => `Basic ${Buffer.from("a:b").toString("base64")}`],
  ["garbage", async () => "Bearer not.a.jwt"],
  [
    "alg none",
    async () =>
      `Bearer ${new UnsecuredJWT({ sub: "mallory" }).setExpirationTime(nowS() + 60).encode()}`,
  ],
  [
    "a wrong secret",
    async () =>
      `Bearer ${await sign(new SignJWT({ sub: "mallory" }).setExpirationTime(nowS() + 60), new TextEncoder().encode("x".repeat(40)))}`,
  ],
  [
    "an expired token",
    async () => `Bearer ${await sign(new SignJWT({ sub: "u" }).setExpirationTime(nowS() - 1))}`,
  ],
  [
    "a not-yet-valid token",
    async () =>
      `Bearer ${await sign(new SignJWT({ sub: "u" }).setNotBefore(nowS() + 600).setExpirationTime(nowS() + 900))}`,
  ],
  ["no sub", async () => `Bearer ${await sign(new SignJWT({}).setExpirationTime(nowS() + 60))}`],
  ["no exp", async () => `Bearer ${await sign(new SignJWT({ sub: "u" }))}`],
  [
    "an RS256 token",
    async () => {
      const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
      return `Bearer ${await new SignJWT({ sub: "u" })
        .setExpirationTime(nowS() + 60)
        .setProtectedHeader({ alg: "RS256" })
        .sign(privateKey)}`;
    },
  ],
  ["a huge header", async () => `Bearer ${"a".repeat(9000)}`],
];

describe("authentication", () => {
  it.each(badTokens)(
    "refuses %s: REST 401 with WWW-Authenticate, gRPC and Connect unauthenticated",
    async (name, make) => {
      const authorization = await make();
      const challenge = name === "an expired token" ? TOKEN_EXPIRED_CHALLENGE : "Bearer";
      const headers: Record<string, string> = authorization === null ? {} : { authorization };
      for (const [method, path] of [
        ["GET", `/quizzes/${quiz.quizId}/sessions`],
        ["POST", `/api/quizzes/${quiz.quizId}/sessions`],
      ] as const) {
        const res = await svc.rest(null, method, path, { headers });
        expect(res.status).toBe(401);
        expect(res.headers.get("www-authenticate")).toBe(challenge);
        expect(await res.json()).toMatchObject({ status: 401, code: "unauthenticated" });
      }
      await expect(svc.grpc.listSessions({ quizId: quiz.quizId }, headers)).rejects.toMatchObject({
        code: 16,
      });
      await expect(svc.grpc.startSession({ quizId: quiz.quizId }, headers)).rejects.toMatchObject({
        code: 16,
      });
      const err = await svc.connect
        .startSession({ quizId: quiz.quizId }, { headers })
        .catch((e) => e);
      expect(ConnectError.from(err).code).toBe(Code.Unauthenticated);
    },
  );

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
      expect(res.headers.get("www-authenticate")).toBe(
        'Bearer error="invalid_token", error_description="The access token expired"',
      );
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
    expect(res.headers.get("www-authenticate")).toBe("Bearer");
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
    expect(late.headers.get("www-authenticate")).toBe(TOKEN_EXPIRED_CHALLENGE);
    await expect(svc.grpc.listSessions({ quizId: quiz.quizId }, headers)).rejects.toMatchObject({
      code: 16,
    });
  });
});
