/**
 * The service's limits, in one place: what a request may weigh and how long
 * it and a connection may take. server.ts, one-port.ts and config.ts read
 * them from here; tests import them rather than repeat the numbers.
 */

/** Largest request body, REST or RPC. The service's requests are a few bytes. */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * Largest request header block, HTTP/1.1 (431 beyond) or HTTP/2 (the
 * advertised SETTINGS_MAX_HEADER_LIST_SIZE). A bearer token is about 300 bytes.
 */
export const MAX_HEADER_BYTES = 16 * 1024;

/**
 * SETTINGS_MAX_CONCURRENT_STREAMS: streams one HTTP/2 connection may have
 * open at once. Node advertises no limit by default (2^32-1).
 */
export const MAX_CONCURRENT_STREAMS = 100;

/**
 * Longest path parameter the router reads: above any id the protos' rules allow (64
 * characters, 768 bytes percent-encoded), so that a long id is refused as too long, by the
 * rules' own words, wherever it is sent.
 */
export const MAX_PARAM_LENGTH = 1024;

/**
 * Default for REQUEST_TIMEOUT_MS: the longest a REST request or unary RPC may
 * take before `deadline_exceeded`. A shorter client deadline wins.
 */
export const REQUEST_TIMEOUT_MS = 10_000;

/** Default for SHUTDOWN_TIMEOUT_MS: how long in-flight requests get on SIGTERM/SIGINT. */
export const SHUTDOWN_TIMEOUT_MS = 10_000;

/**
 * Longest a client may take to send a request's head (HTTP/1.1: then 408
 * and the connection closes), and a new connection its first bytes (then it
 * is dropped): a slow sender is cut off, and holds no slot meanwhile
 * (admission comes after the whole request is read).
 */
export const REQUEST_HEAD_TIMEOUT_MS = 5_000;

/** A connection that has not sent its first bytes by then is dropped (one-port.ts). */
export const FIRST_BYTES_TIMEOUT_MS = REQUEST_HEAD_TIMEOUT_MS;

/**
 * Connections the port holds at once; beyond, a new one is closed as it
 * comes. Below the process's usual file limit (20,000 here) with room for
 * the database pool, NATS and the metrics listener, so that a flood of
 * connections is refused at once instead of exhausting descriptors.
 */
export const MAX_CONNECTIONS = 10_000;

/**
 * During a shutdown's drain, an HTTP/1.1 keep-alive connection idle this
 * long is closed: a client looping requests on it meanwhile gets its next
 * answer with `Connection: close` instead of a reset.
 */
export const DRAIN_IDLE_MS = 1_000;

/**
 * Responses smaller than this go uncompressed even when the client accepts
 * gzip (grpc-js always does): pages are a few KiB, and gzip would spend more
 * CPU than a LAN saves on them (BENCHMARKS.md).
 */
export const COMPRESS_MIN_BYTES = 64 * 1024;

/**
 * An HTTP/2 session with no activity for this long is closed: Fastify's
 * default (http2SessionTimeout), kept now that app-server.ts makes the server.
 */
export const HTTP2_SESSION_IDLE_MS = 72_000;

/**
 * nghttp2's own reset limit (Node's `streamResetBurst` / `streamResetRate`,
 * default 1,000 and 33/s) ends a session with GOAWAY INTERNAL_ERROR within
 * one read, before the 'stream' events of that read reach the reset guard
 * (edge/reset-guard.ts). Set far above the guard's limit it stays a backstop,
 * and the guard answers first, with the code that says why (ENHANCE_YOUR_CALM):
 * one 64 KiB read holds at most about 2,900 resets.
 */
export const NGHTTP2_RESET_LIMIT = { streamResetBurst: 10_000, streamResetRate: 1_000 };

/**
 * Share of the connection cap above which each new connection closes the
 * connection idle longest (edge/idle-connections.ts): silent, between
 * requests, or an HTTP/2 session with no stream open.
 */
export const CLOSE_IDLE_ABOVE = 0.9;

/**
 * Connections the kernel queues for the port before it accepts them. Too
 * short, and a flood of connections reconnecting as the port closes idle
 * ones makes the kernel drop new callers' SYNs (they retry after 1 s, then
 * 3 s); too deep, and a new caller waits behind every dead connection of a
 * storm ahead of it (each costs the service about 0.35 ms to read, count and
 * close: 4096 of them, 1.4 s). Both chaos tests (preface flood, short-lived
 * storm) hold at 1024 on 2 cores.
 */
export const LISTEN_BACKLOG = 1024;

/**
 * The operators' listener (METRICS_PORT, edge/metrics-listener.ts): scrapers
 * and probes are a handful, their requests a line and a few headers, and they
 * come every few seconds.
 */
export const METRICS_LISTENER = {
  /** An idle connection is dropped after this long. */
  keepAliveTimeoutMs: 30_000,
  /** A request that has not fully arrived by then is dropped. */
  requestTimeoutMs: 5000,
  /** More connections than this are refused as they come. */
  maxConnections: 256,
  /** Largest request header block (431 beyond). */
  maxHeaderBytes: 8 * 1024,
} as const;
