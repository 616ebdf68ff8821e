import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.js";

describe("loadConfig", () => {
  it("reads CORS_ORIGINS as a comma-separated list of origins, none by default", () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(
      loadConfig({ CORS_ORIGINS: "https://app.example.com, http://localhost:5173," }).corsOrigins,
    ).toEqual(["https://app.example.com", "http://localhost:5173"]);
  });

  it("refuses a CORS origin that is a wildcard, has a path, or is not a URL", () => {
    for (const bad of ["*", "https://app.example.com/", "app.example.com", "https://a.com/x"]) {
      expect(() => loadConfig({ CORS_ORIGINS: bad })).toThrow(ConfigError);
    }
  });

  it("reads TRUST_PROXY: off by default, a hop count, or proxy addresses and CIDRs", () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: "off" }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: "2" }).trustProxy).toBe(2);
    expect(
      loadConfig({ TRUST_PROXY: "10.0.0.0/8, 127.0.0.1,::1, fd00::/8,loopback" }).trustProxy,
    ).toEqual(["10.0.0.0/8", "127.0.0.1", "::1", "fd00::/8", "loopback"]);
    for (const bad of ["on", "true", "10.0.0.0/33", "example.com", "10.0.0.1/8/1", "101"]) {
      expect(() => loadConfig({ TRUST_PROXY: bad }), bad).toThrow(/TRUST_PROXY/);
    }
  });

  it("reads REQUEST_TIMEOUT_MS, 10 s by default", () => {
    expect(loadConfig({}).requestTimeoutMs).toBe(10_000);
    expect(loadConfig({ REQUEST_TIMEOUT_MS: "2500" }).requestTimeoutMs).toBe(2500);
    expect(() => loadConfig({ REQUEST_TIMEOUT_MS: "0" })).toThrow(/REQUEST_TIMEOUT_MS/);
  });

  it("reads MIGRATE_ON_START, true by default", () => {
    expect(loadConfig({}).migrateOnStart).toBe(true);
    expect(loadConfig({ MIGRATE_ON_START: "false" }).migrateOnStart).toBe(false);
    expect(() => loadConfig({ MIGRATE_ON_START: "no" })).toThrow(/MIGRATE_ON_START/);
  });

  it("reads MAX_IN_FLIGHT (the pool's size by default) and ADAPTIVE_ADMISSION (false)", () => {
    expect(loadConfig({ DB_POOL_SIZE: "7" }).admission).toMatchObject({
      maxInFlight: 7,
      adaptive: false,
    });
    expect(loadConfig({ MAX_IN_FLIGHT: "3", ADAPTIVE_ADMISSION: "true" }).admission).toMatchObject({
      maxInFlight: 3,
      adaptive: true,
    });
    expect(() => loadConfig({ ADAPTIVE_ADMISSION: "off" })).toThrow(/ADAPTIVE_ADMISSION/);
  });

  it("reads admission's tuning: MAX_QUEUED 1000, ADMISSION_TARGET_MS 5, ADMISSION_INTERVAL_MS 100, ADMISSION_STANDING_WAIT_MS 2000, MAX_QUEUED_PER_USER twice MAX_IN_FLIGHT (at least 20)", () => {
    expect(loadConfig({}).admission).toEqual({
      maxInFlight: 10,
      maxQueued: 1000,
      maxQueuedPerUser: 20,
      targetMs: 5,
      intervalMs: 100,
      standingWaitMs: 2000,
      adaptive: false,
    });
    expect(loadConfig({ MAX_IN_FLIGHT: "30" }).admission.maxQueuedPerUser).toBe(60);
    expect(
      loadConfig({
        MAX_QUEUED: "50",
        ADMISSION_TARGET_MS: "10",
        ADMISSION_INTERVAL_MS: "200",
        ADMISSION_STANDING_WAIT_MS: "500",
      }).admission,
    ).toMatchObject({ maxQueued: 50, targetMs: 10, intervalMs: 200, standingWaitMs: 500 });
    expect(() => loadConfig({ MAX_QUEUED: "0" })).toThrow(/MAX_QUEUED/);
    expect(() => loadConfig({ ADMISSION_TARGET_MS: "x" })).toThrow(/ADMISSION_TARGET_MS/);
  });

  it("takes DATABASE_READ_URL only as a mysql:// URL beside a mysql:// DATABASE_URL", () => {
    const primary = "mysql://app@db:3306/practice";
    const replica = "mysql://reader@replica:3306/practice";
    expect(loadConfig({ DATABASE_URL: primary }).databaseReadUrl).toBeUndefined();
    expect(loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: replica }).databaseReadUrl).toBe(
      replica,
    );
    expect(() => loadConfig({ DATABASE_READ_URL: replica })).toThrow(/DATABASE_READ_URL/);
    expect(() =>
      loadConfig({ DATABASE_URL: primary, DATABASE_READ_URL: "sqlite::memory:" }),
    ).toThrow(/DATABASE_READ_URL/);
  });

  it("serves the practice page in development, not in production unless PRACTICE_PAGE=on", () => {
    const secret = "x".repeat(32);
    expect(loadConfig({}).practicePage).toBe(true);
    expect(loadConfig({ PRACTICE_PAGE: "off" }).practicePage).toBe(false);
    expect(loadConfig({ NODE_ENV: "production", JWT_SECRET: secret }).practicePage).toBe(false);
    expect(
      loadConfig({ NODE_ENV: "production", JWT_SECRET: secret, PRACTICE_PAGE: "on" }).practicePage,
    ).toBe(true);
    expect(() => loadConfig({ PRACTICE_PAGE: "yes please" })).toThrow(/PRACTICE_PAGE/);
  });

  it("keeps the unary short path on unless RPC_SHORT_PATH=off", () => {
    expect(loadConfig({}).rpcShortPath).toBe(true);
    expect(loadConfig({ RPC_SHORT_PATH: "off" }).rpcShortPath).toBe(false);
    expect(() => loadConfig({ RPC_SHORT_PATH: "maybe" })).toThrow(
      /^RPC_SHORT_PATH must be on or off/,
    );
  });
});

describe("the edge's limits", () => {
  it("has its defaults here: keep-alive 65 s, a stalled answer 10 s, 1 MiB a session, 32 MiB in all", () => {
    expect(loadConfig({}).edge).toEqual({
      keepAliveTimeoutMs: 65_000,
      writeStallMs: 10_000,
      sessionUnsentMaxBytes: 1024 * 1024,
      unsentMaxBytes: 32 * 1024 * 1024,
    });
  });

  it("reads KEEP_ALIVE_TIMEOUT_MS and the unsent limits, and refuses a total below one session's", () => {
    const edge = loadConfig({
      KEEP_ALIVE_TIMEOUT_MS: "620000",
      WRITE_STALL_MS: "5000",
      HTTP2_SESSION_UNSENT_MAX_BYTES: "2097152",
      UNSENT_MAX_BYTES: "67108864",
    }).edge;
    expect(edge).toEqual({
      keepAliveTimeoutMs: 620_000,
      writeStallMs: 5000,
      sessionUnsentMaxBytes: 2 * 1024 * 1024,
      unsentMaxBytes: 64 * 1024 * 1024,
    });
    expect(() =>
      loadConfig({
        HTTP2_SESSION_UNSENT_MAX_BYTES: "8388608",
        HTTP2_UNSENT_MAX_BYTES: "4194304",
      }),
    ).toThrow(/^UNSENT_MAX_BYTES must be at least HTTP2_SESSION_UNSENT_MAX_BYTES/);
    expect(() => loadConfig({ KEEP_ALIVE_TIMEOUT_MS: "soon" })).toThrow(
      /^KEEP_ALIVE_TIMEOUT_MS must be an integer/,
    );
  });

  it("reads the unsent limits' older names, HTTP2_WRITE_STALL_MS and HTTP2_UNSENT_MAX_BYTES; the new names win", () => {
    const older = loadConfig({ HTTP2_WRITE_STALL_MS: "5000", HTTP2_UNSENT_MAX_BYTES: "67108864" });
    expect(older.edge).toMatchObject({ writeStallMs: 5000, unsentMaxBytes: 64 * 1024 * 1024 });
    const both = loadConfig({ HTTP2_WRITE_STALL_MS: "5000", WRITE_STALL_MS: "7000" });
    expect(both.edge.writeStallMs).toBe(7000);
  });
});

describe("every refusal names its variable and what it must be", () => {
  it.each([
    [{ PORT: "http" }, /^PORT must be an integer from 0 to 65535, got "http"$/],
    [{ METRICS_PORT: "-1" }, /^METRICS_PORT must be an integer/],
    [{ PORT: "9000", METRICS_PORT: "9000" }, /^METRICS_PORT must differ from PORT/],
    [{ DB_POOL_SIZE: "0" }, /^DB_POOL_SIZE must be an integer/],
    [
      { LOG_LEVEL: "loud" },
      /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/,
    ],
    [{ DATABASE_URL: "postgres://x/y" }, /^DATABASE_URL must be mysql:\/\//],
    [{ JWT_SECRET: "short" }, /^JWT_SECRET must be at least 32 characters/],
    [{ JWT_PUBLIC_KEY: "not a key" }, /^JWT_PUBLIC_KEY is not a PEM public key/],
    [{ JWT_JWKS_URL: "nope" }, /^JWT_JWKS_URL is not a URL/],
    [{ TLS_CERT_FILE: "cert.pem" }, /TLS_CERT_FILE and TLS_KEY_FILE/],
    [{ NODE_ENV: "production" }, /JWT_SECRET.*JWT_PUBLIC_KEY.*JWT_JWKS_URL/],
  ])("%o", (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
  });
});

describe("events configuration", () => {
  it("has no NATS and no relay by default: events wait in the outbox", () => {
    expect(loadConfig({}).events).toEqual({
      relayInProcess: false,
      batchSize: 200,
      leaseMs: 30_000,
    });
  });

  it("relays in process to stream PRACTICE, subjects practice.*, once NATS_URL is set", () => {
    expect(loadConfig({ NATS_URL: "nats://127.0.0.1:4222" }).events).toMatchObject({
      nats: { url: "nats://127.0.0.1:4222", stream: "PRACTICE", subjectPrefix: "practice" },
      relayInProcess: true,
    });
    expect(
      loadConfig({ NATS_URL: "nats://127.0.0.1:4222", OUTBOX_RELAY: "off" }).events.relayInProcess,
    ).toBe(false);
  });

  it("refuses a bad NATS_URL, stream, subject prefix, relay switch or lease", () => {
    for (const env of [
      { NATS_URL: "http://127.0.0.1:4222" },
      { NATS_URL: "nats://h:4222", NATS_STREAM: "a.b" },
      { NATS_URL: "nats://h:4222", NATS_SUBJECT_PREFIX: "a.>" },
      { OUTBOX_RELAY: "yes" },
      { OUTBOX_LEASE_MS: "120000" },
    ]) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
    }
  });

  it("turns tracing on only when spans have somewhere to go (an OTLP endpoint, or an exporter named)", () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(
      loadConfig({ OTEL_SERVICE_NAME: "x", OTEL_TRACES_SAMPLER: "always_on" }).tracing,
    ).toBeUndefined();
    const on = { sampler: "parentbased_always_on", ratio: 1 };
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).tracing).toEqual(
      on,
    );
    expect(
      loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/v1/traces" }).tracing,
    ).toEqual(on);
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "console" }).tracing).toEqual(on);
    expect(loadConfig({ OTEL_TRACES_EXPORTER: "otlp" }).tracing).toEqual(on);
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    expect(loadConfig({ ...endpoint, OTEL_TRACES_EXPORTER: "none" }).tracing).toBeUndefined();
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: "true" }).tracing).toBeUndefined();
  });

  it("reads OTEL_TRACES_SAMPLER and its ratio, and refuses what the SDK would only warn about", () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    expect(
      loadConfig({
        ...endpoint,
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "0.01",
      }).tracing,
    ).toEqual({ sampler: "parentbased_traceidratio", ratio: 0.01 });
    for (const env of [
      { OTEL_TRACES_SAMPLER: "sometimes" },
      { OTEL_TRACES_SAMPLER_ARG: "2" },
      { OTEL_TRACES_SAMPLER_ARG: "half" },
      { OTEL_EXPORTER_OTLP_ENDPOINT: "collector 4318" },
    ]) {
      expect(() => loadConfig({ ...endpoint, ...env })).toThrow(ConfigError);
    }
  });
});
