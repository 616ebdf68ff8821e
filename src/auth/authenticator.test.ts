import { ConnectError } from "@connectrpc/connect";
import * as jose from "jose";
import { describe, expect, it, vi } from "vitest";
import { FakeClock } from "../domain/clock.js";
import { createAuthenticator } from "./authenticator.js";
import { signToken } from "./tokens.js";

vi.mock("jose", async (importOriginal) => {
  const original = await importOriginal<typeof import("jose")>();
  return { ...original, jwtVerify: vi.fn(original.jwtVerify) };
});

const SECRET = "a-secret-of-at-least-thirty-two-characters";

describe("the authenticator", () => {
  it("verifies a token once for all the calls that bring it at once", async () => {
    const clock = new FakeClock(new Date());
    const auth = createAuthenticator({ secret: SECRET }, clock);
    const token = await signToken(SECRET, "user-1", { now: clock.now() });
    const verify = vi.mocked(jose.jwtVerify);
    verify.mockClear();
    const users = await Promise.all(
      Array.from({ length: 50 }, () => auth.authenticate(`Bearer ${token}`)),
    );
    expect(new Set(users)).toEqual(new Set(["user-1"]));
    expect(verify).toHaveBeenCalledTimes(1);
  });

  it("refuses every call of a bad token brought at once, and verifies it again later", async () => {
    const clock = new FakeClock(new Date());
    const auth = createAuthenticator({ secret: SECRET }, clock);
    const forged = await signToken(`${SECRET}-other`, "user-1", { now: clock.now() });
    const verify = vi.mocked(jose.jwtVerify);
    verify.mockClear();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 5 }, () => auth.authenticate(`Bearer ${forged}`)),
    );
    expect(outcomes.map((o) => o.status)).toEqual(Array(5).fill("rejected"));
    await expect(auth.authenticate(`Bearer ${forged}`)).rejects.toThrow();
    expect(verify).toHaveBeenCalledTimes(2);
  });

  it("refuses what is no bearer JWT at all without verifying anything: refusals stay cheap", async () => {
    const auth = createAuthenticator({ secret: SECRET }, new FakeClock(new Date()));
    const verify = vi.mocked(jose.jwtVerify);
    verify.mockClear();
    const said = [];
    for (const header of [
      undefined,
      "",
      "Bearer",
      "Bearer  ",
      "Basic YTpi",
      "Bearer a b",
      "Bearer a+b/c=",
    ]) {
      said.push(await auth.authenticate(header).catch((e: ConnectError) => e.rawMessage));
    }
    expect(said).toEqual([
      "no bearer token: send the header authorization: Bearer <token>",
      "no bearer token: send the header authorization: Bearer <token>",
      "no bearer token: send the header authorization: Bearer <token>",
      "no bearer token: send the header authorization: Bearer <token>",
      "the authorization header is not a bearer token: send authorization: Bearer <token>",
      "bearer token is not a JWT (a signed JWS: three base64url parts joined by dots)",
      "bearer token is not a JWT (a signed JWS: three base64url parts joined by dots)",
    ]);
    expect(verify).not.toHaveBeenCalled();
  });

  it("refuses an iat more than 60 s ahead as not yet valid, and takes one less far ahead", async () => {
    const clock = new FakeClock(new Date());
    const auth = createAuthenticator({ secret: SECRET }, clock);
    const ahead = (seconds: number) =>
      signToken(SECRET, "early", { now: new Date(clock.now().getTime() + seconds * 1000) });
    const refused = await auth.authenticate(`Bearer ${await ahead(61)}`).catch((e) => e);
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).rawMessage).toMatch(/^bearer token is not valid yet: /);
    expect((refused as ConnectError).metadata.get("www-authenticate")).toMatch(
      /^Bearer error="invalid_token", error_description="bearer token is not valid yet: /,
    );
    await expect(auth.authenticate(`Bearer ${await ahead(59)}`)).resolves.toBe("early");
  });
});
