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
});
