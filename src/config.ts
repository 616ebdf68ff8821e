/**
 * The service's configuration: the one place that reads the environment.
 *
 * `loadConfig()` reads and checks every variable once at start-up and throws a
 * `ConfigError` naming the variable, so a bad deployment fails before it
 * listens instead of on its first request.
 */

import { createPublicKey } from "node:crypto";
import { isIP } from "node:net";
import { REQUEST_TIMEOUT_MS, SHUTDOWN_TIMEOUT_MS } from "./limits.js";

export interface JwtConfig {
  /** HS256 shared secret. */
  secret?: string;
  /** PEM public key (RS256/ES256). */
  publicKeyPem?: string;
  /** JWKS endpoint (RS256/ES256). */
  jwksUrl?: string;
  issuer?: string;
  audience?: string;
}

export interface Config {
  host: string;
  port: number;
  /** The Prometheus `/metrics` listener's port (never the public one). */
  metricsPort: number;
  databaseUrl: string;
  /**
   * A read replica (an account that may only SELECT) for ListSessions,
   * GetSession and GetQuiz; unset: every read goes to `databaseUrl`.
   */
  databaseReadUrl?: string;
  /** Apply pending migrations at start-up (false: `npm run migrate` does, as a job). */
  migrateOnStart: boolean;
  /** Connections in the MySQL pool. */
  dbPoolSize: number;
  /** Admission control of the API's calls (ops/admission.ts). */
  admission: AdmissionConfig;
  /** How long to wait to open a new database connection, and again to ready its session, before answering `unavailable`. */
  dbConnectTimeoutMs: number;
  /** At start-up, how long to keep trying a database that is not up yet. */
  databaseWaitMs: number;
  jwt: JwtConfig;
  production: boolean;
  logLevel: string;
  tls?: { certFile: string; keyFile: string };
  /** How long in-flight requests get to finish after SIGTERM. */
  shutdownTimeoutMs: number;
  /** Longest a request may take before it ends with `deadline_exceeded`. */
  requestTimeoutMs: number;
  /** Browser origins allowed by CORS (`https://app.example.com`); empty: none. */
  corsOrigins: string[];
  /**
   * Which peers' `X-Forwarded-For` names the caller (Fastify's `trustProxy`):
   * none (false), the nearest N hops, or peers at these addresses / CIDRs.
   */
  trustProxy: TrustProxy;
  /**
   * Serve the practice page (examples/web) at `/practice/`: by default in
   * development, not in production (`PRACTICE_PAGE=on|off`).
   */
  practicePage: boolean;
  /** Unary gRPC and Connect calls on the short path (rpc/unary-short-path.ts): `RPC_SHORT_PATH=on|off`, default on. */
  rpcShortPath: boolean;
  events: EventsConfig;
  /** OpenTelemetry tracing (ops/tracing.ts); undefined: off, no SDK loaded. */
  tracing?: TracingConfig;
  /** What one connection may hold of the port, the memory and the CPU (src/edge/). */
  edge: EdgeConfig;
}

/**
 * The edge's limits on what a connection may hold (src/edge/), each named
 * after its variable. Defaults here only: `edgeConfig({})` gives them.
 */
export interface EdgeConfig {
  /**
   * KEEP_ALIVE_TIMEOUT_MS: an idle HTTP/1.1 keep-alive connection is closed
   * after this long. Set it above the idle timeout of any load balancer or
   * proxy in front (AWS ALB 60 s, nginx 60 s), so the proxy closes first and
   * never sends a request on a connection the service is closing.
   */
  keepAliveTimeoutMs: number;
  /**
   * WRITE_STALL_MS: an answer whose unsent bytes make no progress (the
   * client's window at 0) for this long is dropped: an HTTP/2 stream reset,
   * an HTTP/1.1 connection reset; an HTTP/2 session none of whose answers
   * move for this long is destroyed.
   */
  writeStallMs: number;
  /**
   * HTTP2_SESSION_UNSENT_MAX_BYTES: what one HTTP/2 session may hold unsent;
   * while over it, its new streams are refused (REFUSED_STREAM, no work done).
   */
  sessionUnsentMaxBytes: number;
  /**
   * UNSENT_MAX_BYTES: what all connections together, HTTP/1.1 and HTTP/2,
   * may hold unsent; beyond, those holding the most without progress are destroyed.
   */
  unsentMaxBytes: number;
}

/**
 * Admission control (ops/admission.ts), each field named after its variable.
 * Defaults here only: `admissionConfig({}, poolSize)` gives them.
 */
export interface AdmissionConfig {
  /**
   * MAX_IN_FLIGHT: calls doing work at once (default: the pool's size, so none
   * waits inside the pool, where a cancelled call could not leave).
   */
  maxInFlight: number;
  /**
   * MAX_QUEUED: calls that may wait for a slot. A waiter costs memory, not
   * time: it waits until its own deadline or until its client leaves. Beyond,
   * room is made by the one shedding rule (`Admission`), or the newcomer is refused.
   */
  maxQueued: number;
  /**
   * MAX_QUEUED_PER_USER: calls of one caller (the token's user, or a client
   * address) that may wait at once; beyond, 429 / resource_exhausted. Running
   * calls are not counted: a caller alone may use every slot.
   */
  maxQueuedPerUser: number;
  /** ADMISSION_TARGET_MS: CoDel's target (RFC 8289): a wait below this is no queue at all. */
  targetMs: number;
  /**
   * ADMISSION_INTERVAL_MS: CoDel's interval: once the queue's delay has stayed
   * at `targetMs` or more for this long, the queue stands, and is served newest first.
   */
  intervalMs: number;
  /**
   * ADMISSION_STANDING_WAIT_MS: under a standing full queue, the longest a
   * waiter keeps its place against newcomers refused at the door.
   */
  standingWaitMs: number;
  /**
   * ADAPTIVE_ADMISSION: run fewer than `maxInFlight` at once while more would
   * only make each call slower (latency-limit.ts). Off: always up to `maxInFlight`.
   */
  adaptive: boolean;
}

/**
 * Tracing as the standard OTEL_* variables set it. The SDK reads the exporter's
 * own variables (endpoint, protocol, headers, resource) itself; what we decide
 * from is here.
 */
export interface TracingConfig {
  /** OTEL_TRACES_SAMPLER (default parentbased_always_on: a caller's decision is kept). */
  sampler: TraceSampler;
  /** OTEL_TRACES_SAMPLER_ARG: the ratio of the *traceidratio samplers (default 1). */
  ratio: number;
}

const TRACE_SAMPLERS = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
] as const;
export type TraceSampler = (typeof TRACE_SAMPLERS)[number];

/** Where the outbox's events are published; see src/events/. */
export interface EventsConfig {
  /** NATS_URL and friends; undefined: events stay in the outbox, no relay. */
  nats?: { url: string; stream: string; subjectPrefix: string };
  /** OUTBOX_RELAY: relay in the service process (default), or leave it to `npm run relay`. */
  relayInProcess: boolean;
  /** RELAY_METRICS_PORT: where `npm run relay` serves /metrics; none by default. */
  relayMetricsPort?: number;
  /** OUTBOX_BATCH_SIZE: rows a relay claims at a time. */
  batchSize: number;
  /** OUTBOX_LEASE_MS: how long a relay's claim lasts (under the stream's duplicate window). */
  leaseMs: number;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

/** Without DATABASE_URL: the embedded SQLite store, for trying the service. */
export const DEFAULT_DATABASE_URL = "sqlite:./data/practice.db";
export const DEFAULT_PORT = 8080;

type Env = Record<string, string | undefined>;

/** Reads the configuration from `env` (by default `process.env`). */
export function loadConfig(env: Env = process.env): Config {
  const production = env.NODE_ENV === "production";
  const jwt: JwtConfig = {
    secret: optional(env, "JWT_SECRET"),
    publicKeyPem: optional(env, "JWT_PUBLIC_KEY"),
    jwksUrl: optional(env, "JWT_JWKS_URL"),
    issuer: optional(env, "JWT_ISSUER"),
    audience: optional(env, "JWT_AUDIENCE"),
  };
  const keys = [jwt.secret, jwt.publicKeyPem, jwt.jwksUrl].filter((k) => k !== undefined);
  if (keys.length > 1) {
    throw new ConfigError("set only one of JWT_SECRET, JWT_PUBLIC_KEY and JWT_JWKS_URL");
  }
  if (keys.length === 0 && production) {
    throw new ConfigError(
      "no JWT key: set JWT_SECRET (HS256), JWT_PUBLIC_KEY (PEM) or JWT_JWKS_URL in production",
    );
  }
  if (jwt.secret !== undefined && jwt.secret.length < 32) {
    throw new ConfigError("JWT_SECRET must be at least 32 characters (HS256 needs 256 bits)");
  }
  if (jwt.publicKeyPem !== undefined && !isPublicKey(jwt.publicKeyPem)) {
    throw new ConfigError(
      "JWT_PUBLIC_KEY is not a PEM public key (-----BEGIN PUBLIC KEY-----, RSA or EC)",
    );
  }
  if (jwt.jwksUrl !== undefined && !URL.canParse(jwt.jwksUrl)) {
    throw new ConfigError(`JWT_JWKS_URL is not a URL: ${jwt.jwksUrl}`);
  }

  const databaseUrl = optional(env, "DATABASE_URL") ?? DEFAULT_DATABASE_URL;
  const mysql = /^mysql:\/\//.test(databaseUrl) && URL.canParse(databaseUrl);
  const sqlite = /^sqlite:.+/.test(databaseUrl);
  if (!mysql && !sqlite) {
    throw new ConfigError(
      "DATABASE_URL must be mysql://user:pass@host:port/database, sqlite:PATH or sqlite::memory:",
    );
  }
  if (mysql && new URL(databaseUrl).pathname.replace(/^\//, "") === "") {
    throw new ConfigError(
      "DATABASE_URL needs a database name: mysql://user:pass@host:port/database",
    );
  }

  const databaseReadUrl = optional(env, "DATABASE_READ_URL");
  if (databaseReadUrl !== undefined) {
    if (!mysql) throw new ConfigError("DATABASE_READ_URL needs a mysql:// DATABASE_URL");
    if (!/^mysql:\/\//.test(databaseReadUrl) || !URL.canParse(databaseReadUrl)) {
      throw new ConfigError("DATABASE_READ_URL must be mysql://user:pass@host:port/database");
    }
  }

  const certFile = optional(env, "TLS_CERT_FILE");
  const keyFile = optional(env, "TLS_KEY_FILE");
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new ConfigError("set both TLS_CERT_FILE and TLS_KEY_FILE, or neither");
  }

  const corsOrigins = (optional(env, "CORS_ORIGINS") ?? "")
    .split(",")
    .map((o) => o.trim())
    .filter((o) => o !== "");
  for (const origin of corsOrigins) {
    // An origin is scheme://host[:port], nothing more: "*" or a path would
    // silently allow more (or nothing) compared to what was meant.
    if (!URL.canParse(origin) || new URL(origin).origin !== origin) {
      throw new ConfigError(
        `CORS_ORIGINS: "${origin}" is not an origin like https://app.example.com`,
      );
    }
  }

  const port = integer(env, "PORT", DEFAULT_PORT, 0, 65535);
  const dbPoolSize = integer(env, "DB_POOL_SIZE", DEFAULT_POOL_SIZE, 1, 1000);
  const metricsPort = integer(env, "METRICS_PORT", 9464, 0, 65535);
  if (metricsPort === port && port !== 0) {
    throw new ConfigError(
      "METRICS_PORT must differ from PORT: /metrics never goes on the public port",
    );
  }

  return {
    events: eventsConfig(env),
    host: optional(env, "HOST") ?? "0.0.0.0",
    port,
    metricsPort,
    databaseUrl,
    databaseReadUrl,
    migrateOnStart: boolean(env, "MIGRATE_ON_START", true),
    dbPoolSize,
    admission: admissionConfig(env, dbPoolSize),
    dbConnectTimeoutMs: integer(env, "DB_CONNECT_TIMEOUT_MS", 2000, 100, 60_000),
    databaseWaitMs: integer(env, "DATABASE_WAIT_MS", 30_000, 0, 3_600_000),
    jwt,
    production,
    logLevel: oneOf(env, "LOG_LEVEL", LOG_LEVELS, "info"),
    tls: certFile && keyFile ? { certFile, keyFile } : undefined,
    shutdownTimeoutMs: integer(env, "SHUTDOWN_TIMEOUT_MS", SHUTDOWN_TIMEOUT_MS, 0, 600_000),
    requestTimeoutMs: integer(env, "REQUEST_TIMEOUT_MS", REQUEST_TIMEOUT_MS, 1, 600_000),
    corsOrigins,
    trustProxy: trustProxyOf(optional(env, "TRUST_PROXY")),
    practicePage: flag(env, "PRACTICE_PAGE", !production),
    rpcShortPath: flag(env, "RPC_SHORT_PATH", true),
    tracing: tracingConfig(env),
    edge: edgeConfig(env),
  };
}

/** DB_POOL_SIZE's default. */
const DEFAULT_POOL_SIZE = 10;

/**
 * Admission's settings (see `AdmissionConfig`) for a pool of `dbPoolSize`;
 * `admissionConfig({})` gives the defaults. Up to 1,000 wait; target 5 ms and
 * interval 100 ms are CoDel's and Facebook's values ("Fail at scale"): they only
 * decide the order of service and who is shed once the queue is full, never
 * that a burst the queue can hold is refused.
 */
export function admissionConfig(
  env: Env = process.env,
  dbPoolSize = DEFAULT_POOL_SIZE,
): AdmissionConfig {
  const maxInFlight = integer(env, "MAX_IN_FLIGHT", dbPoolSize, 1, 100_000);
  return {
    maxInFlight,
    maxQueued: integer(env, "MAX_QUEUED", 1000, 1, 1_000_000),
    // Twice MAX_IN_FLIGHT, at least 20: a burst of one learner's calls waits rather than being refused.
    maxQueuedPerUser: integer(
      env,
      "MAX_QUEUED_PER_USER",
      Math.max(20, 2 * maxInFlight),
      1,
      100_000,
    ),
    targetMs: integer(env, "ADMISSION_TARGET_MS", 5, 1, 60_000),
    intervalMs: integer(env, "ADMISSION_INTERVAL_MS", 100, 1, 600_000),
    standingWaitMs: integer(env, "ADMISSION_STANDING_WAIT_MS", 2000, 1, 600_000),
    adaptive: boolean(env, "ADAPTIVE_ADMISSION", false),
  };
}

/** The edge's limits (see `EdgeConfig`); `edgeConfig({})` gives the defaults. */
export function edgeConfig(given: Env = process.env): EdgeConfig {
  const mib = 1024 * 1024;
  // Named for HTTP/2 until they covered HTTP/1.1 too: the older names are still read.
  const env = olderNames(given, {
    WRITE_STALL_MS: "HTTP2_WRITE_STALL_MS",
    UNSENT_MAX_BYTES: "HTTP2_UNSENT_MAX_BYTES",
  });
  const sessionUnsentMaxBytes = integer(
    env,
    "HTTP2_SESSION_UNSENT_MAX_BYTES",
    mib,
    64 * 1024,
    1024 * mib,
  );
  const unsentMaxBytes = integer(env, "UNSENT_MAX_BYTES", 32 * mib, mib, 16 * 1024 * mib);
  if (unsentMaxBytes < sessionUnsentMaxBytes) {
    throw new ConfigError("UNSENT_MAX_BYTES must be at least HTTP2_SESSION_UNSENT_MAX_BYTES");
  }
  return {
    keepAliveTimeoutMs: integer(env, "KEEP_ALIVE_TIMEOUT_MS", 65_000, 1000, 3_600_000),
    writeStallMs: integer(env, "WRITE_STALL_MS", 10_000, 500, 600_000),
    sessionUnsentMaxBytes,
    unsentMaxBytes,
  };
}

/**
 * Tracing is on when spans have somewhere to go: an OTLP endpoint, or
 * OTEL_TRACES_EXPORTER naming an exporter (otlp goes to localhost:4318 by
 * default, console to stdout). OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none turns it off whatever else is set.
 */
export function tracingConfig(env: Env = process.env): TracingConfig | undefined {
  if (optional(env, "OTEL_SDK_DISABLED")?.toLowerCase() === "true") return undefined;
  const exporters = (optional(env, "OTEL_TRACES_EXPORTER") ?? "")
    .split(",")
    .map((e) => e.trim().toLowerCase())
    .filter((e) => e !== "");
  if (exporters.includes("none")) return undefined;
  const endpoint =
    optional(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") ??
    optional(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  const named = exporters.some((e) => e === "otlp" || e === "console");
  if (endpoint === undefined && !named) return undefined;
  if (endpoint !== undefined && !URL.canParse(endpoint)) {
    throw new ConfigError(`OTEL_EXPORTER_OTLP_ENDPOINT is not a URL: ${endpoint}`);
  }
  const sampler = oneOf(env, "OTEL_TRACES_SAMPLER", TRACE_SAMPLERS, "parentbased_always_on");
  const rawRatio = optional(env, "OTEL_TRACES_SAMPLER_ARG");
  const ratio = rawRatio === undefined ? 1 : Number(rawRatio);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got "${rawRatio}"`);
  }
  return { sampler, ratio };
}

function eventsConfig(env: Env): EventsConfig {
  const relay = optional(env, "OUTBOX_RELAY") ?? "on";
  if (relay !== "on" && relay !== "off") {
    throw new ConfigError(`OUTBOX_RELAY must be "on" or "off", got "${relay}"`);
  }
  const relayMetricsPort =
    optional(env, "RELAY_METRICS_PORT") === undefined
      ? undefined
      : integer(env, "RELAY_METRICS_PORT", 0, 0, 65535);
  const relaying = {
    relayMetricsPort,
    batchSize: integer(env, "OUTBOX_BATCH_SIZE", 200, 1, 1000),
    leaseMs: integer(env, "OUTBOX_LEASE_MS", 30_000, 1000, 60_000),
  };
  const url = optional(env, "NATS_URL");
  if (url === undefined) return { relayInProcess: false, ...relaying };
  for (const server of url.split(",").map((s) => s.trim())) {
    const withScheme = server.includes("://") ? server : `nats://${server}`;
    if (!URL.canParse(withScheme) || !/^(nats|tls|ws|wss):$/.test(new URL(withScheme).protocol)) {
      throw new ConfigError(`NATS_URL: "${server}" is not a server like nats://127.0.0.1:4222`);
    }
  }
  const stream = optional(env, "NATS_STREAM") ?? "PRACTICE";
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(stream)) {
    throw new ConfigError(`NATS_STREAM must be 1-64 letters, digits, "_" or "-", got "${stream}"`);
  }
  const subjectPrefix = optional(env, "NATS_SUBJECT_PREFIX") ?? "practice";
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(subjectPrefix)) {
    throw new ConfigError(
      `NATS_SUBJECT_PREFIX must be dot-separated NATS tokens, got "${subjectPrefix}"`,
    );
  }
  return { nats: { url, stream, subjectPrefix }, relayInProcess: relay === "on", ...relaying };
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

/** `env` with each renamed variable's older name read as the new one when only it is set. */
function olderNames(env: Env, renamed: Record<string, string>): Env {
  const out = { ...env };
  for (const [name, older] of Object.entries(renamed)) {
    if (out[name] === undefined && out[older] !== undefined) out[name] = out[older];
  }
  return out;
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if ((values as readonly string[]).includes(raw)) return raw as T;
  throw new ConfigError(`${name} must be one of ${values.join(", ")}, got "${raw}"`);
}

function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (/^(on|true|1)$/i.test(raw)) return true;
  if (/^(off|false|0)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be on or off, got "${raw}"`);
}

/** `TRUST_PROXY`: off, a hop count, or a list of proxy addresses and CIDRs. */
export type TrustProxy = false | number | string[];

/** proxy-addr's names for address ranges, which Fastify's trustProxy accepts. */
const NAMED_RANGES = new Set(["loopback", "linklocal", "uniquelocal"]);

function trustProxyOf(value: string | undefined): TrustProxy {
  if (value === undefined || value === "off" || value === "0") return false;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > 100) throw new ConfigError("TRUST_PROXY: at most 100 proxy hops");
    return hops;
  }
  if (value === "on" || value === "true") {
    throw new ConfigError(
      "TRUST_PROXY=on would believe any caller's X-Forwarded-For: give the proxies' addresses (10.0.0.0/8,127.0.0.1) or their count",
    );
  }
  const list = value
    .split(",")
    .map((a) => a.trim())
    .filter((a) => a !== "");
  for (const entry of list) {
    const [address = "", bits, ...rest] = entry.split("/");
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const okBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= maxBits);
    if (!NAMED_RANGES.has(entry) && (family === 0 || !okBits || rest.length > 0)) {
      throw new ConfigError(
        `TRUST_PROXY: "${entry}" is not an address, a CIDR (10.0.0.0/8) or loopback, linklocal, uniquelocal`,
      );
    }
  }
  return list.length === 0 ? false : list;
}

function optional(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === "" ? undefined : value;
}

function boolean(env: Env, name: string, fallback: boolean): boolean {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (raw === "true" || raw === "1") return true;
  if (raw === "false" || raw === "0") return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

function isPublicKey(pem: string): boolean {
  try {
    createPublicKey(pem);
    return true;
  } catch {
    return false;
  }
}
