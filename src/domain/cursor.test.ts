import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "./cursor.js";

const position = {
  startedAt: new Date("2026-11-22T02:13:10.123Z"),
  id: "019a4b5c-0000-7000-8000-000000000001",
};

describe("cursor", () => {
  it("round-trips a position as base64url text", () => {
    const text = encodeCursor(position);
    expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeCursor(text)).toEqual(position);
  });

  it.each([
    ["empty", ""],
    ["not base64url", "a+b/c="],
    ["random bytes", Buffer.from([0xff, 0x00, 0x13, 0x37]).toString("base64url")],
    ["truncated", encodeCursor(position).slice(0, -4)],
    ["wrong version", Buffer.from(`v2.1.${position.id}`).toString("base64url")],
    ["negative time", Buffer.from(`v1.-1.${position.id}`).toString("base64url")],
    ["time past year 9999", Buffer.from(`v1.253402300800000.${position.id}`).toString("base64url")],
    ["SQL in the id", Buffer.from("v1.1.' OR 1=1 --").toString("base64url")],
    ["extra part", Buffer.from(`v1.1.${position.id}.x`).toString("base64url")],
    ["huge", "A".repeat(5000)],
  ])("refuses a %s cursor", (_name, text) => {
    expect(decodeCursor(text)).toBeUndefined();
  });
});
