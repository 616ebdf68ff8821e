import { describe, expect, it } from "vitest";
import { seedDemoCommand } from "./demo-hints.js";

describe("seedDemoCommand", () => {
  it("is the plain command for the default store, and names any other DATABASE_URL", () => {
    expect(seedDemoCommand("sqlite:./data/practice.db")).toBe("npm run seed:demo");
    expect(seedDemoCommand("mysql://root@127.0.0.1:3306/practice")).toBe(
      "DATABASE_URL='mysql://root@127.0.0.1:3306/practice' npm run seed:demo",
    );
    expect(seedDemoCommand("sqlite:/tmp/it's.db")).toBe(
      "DATABASE_URL='sqlite:/tmp/it'\\''s.db' npm run seed:demo",
    );
  });

  it("never prints a password", () => {
    expect(seedDemoCommand("mysql://app:s3cret@db:3306/practice")).toBe(
      "DATABASE_URL='mysql://app:****@db:3306/practice' npm run seed:demo",
    );
  });
});
