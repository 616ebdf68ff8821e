import { describe, expect, it } from "vitest";
import { devBanner, seedDemoCommand } from "./demo-hints.js";

describe("seedDemoCommand", () => {
  it("is the plain command for the default store, and names any other DATABASE_URL", () => {
    expect(seedDemoCommand({ databaseUrl: "sqlite:./data/practice.db", port: 8080 })).toBe(
      "npm run seed:demo",
    );
    expect(seedDemoCommand({ databaseUrl: "mysql://root@127.0.0.1:3306/practice" })).toBe(
      "DATABASE_URL='mysql://root@127.0.0.1:3306/practice' npm run seed:demo",
    );
    expect(seedDemoCommand({ databaseUrl: "sqlite:/tmp/it's.db" })).toBe(
      "DATABASE_URL='sqlite:/tmp/it'\\''s.db' npm run seed:demo",
    );
  });

  it("names the port, TLS files and page its practice link depends on", () => {
    expect(
      seedDemoCommand({
        databaseUrl: "mysql://root@127.0.0.1:3306/practice",
        port: 28080,
        tls: { certFile: "certs/a.pem", keyFile: "certs/a.key" },
        practicePage: false,
      }),
    ).toBe(
      "DATABASE_URL='mysql://root@127.0.0.1:3306/practice' PORT=28080 TLS_CERT_FILE='certs/a.pem' TLS_KEY_FILE='certs/a.key' PRACTICE_PAGE=off npm run seed:demo",
    );
  });

  it("never prints a password", () => {
    expect(seedDemoCommand({ databaseUrl: "mysql://app:s3cret@db:3306/practice" })).toBe(
      "DATABASE_URL='mysql://app:****@db:3306/practice' npm run seed:demo",
    );
  });
});

describe("devBanner", () => {
  it("opens with the service's version, then where to start", () => {
    const lines = devBanner({
      version: "9.8.7",
      scrapePort: 9464,
      databaseUrl: "sqlite:./data/practice.db",
      port: 8080,
      tls: undefined,
      quizIds: ["1"],
      token: "eyJ.x.y",
      practicePage: true,
    }).split("\n");
    expect(lines.slice(1, 3)).toEqual([
      "practice-sessions 9.8.7",
      "Start here: http://127.0.0.1:8080/ (where to go next: the API document, health, the docs)",
    ]);
  });
});
