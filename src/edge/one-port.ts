import { readFileSync } from "node:fs";
import {
  type Http2Session,
  constants as h2constants,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import type { App, StreamPath, TlsFiles } from "../app-server.js";
import { type EdgeConfig, edgeConfig } from "../config.js";
import {
  CLOSE_IDLE_ABOVE,
  FIRST_BYTES_TIMEOUT_MS,
  LISTEN_BACKLOG,
  MAX_CONNECTIONS,
} from "../limits.js";
import { type Http1Handler, http1Connections } from "./http1-connections.js";
import { IdleConnections } from "./idle-connections.js";
import { guardResets } from "./reset-guard.js";
import { SessionTimers } from "./session-timers.js";
import { guardBodyPieces } from "./small-pieces.js";
import { resetAfterTrailers } from "./trailers-reset.js";
import { UnfinishedRequests } from "./unfinished-requests.js";
import { UnsentBytes } from "./unsent-bytes.js";

/** What an HTTP/2 client with prior knowledge sends first (RFC 9113 §3.4). */
const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n");

export interface OnePortServer {
  /** The listening socket: `address()` tells the port. */
  server: Server;
  listen(port: number, host: string): Promise<void>;
  /**
   * Stops accepting, lets in-flight requests finish for up to `timeoutMs`
   * (GOAWAY to HTTP/2 sessions, idle HTTP/1.1 keep-alives closed), then
   * destroys what is left and closes the app. Resolves with how many
   * connections were still open at `timeoutMs` and so were cut.
   */
  close(timeoutMs: number): Promise<number>;
}

export interface OnePortOptions {
  /** PEM files: with them the port speaks TLS, ALPN h2 and http/1.1. */
  tls?: TlsFiles;
  /** Connections held at once; beyond, a new one is closed as it comes. Default MAX_CONNECTIONS. */
  maxConnections?: number;
  /** What a connection may hold (src/config.ts); default `edgeConfig({})`. */
  edge?: EdgeConfig;
}

/**
 * Serves `app` on one TCP port: the service's edge, the same for every way
 * in. A front `net.Server` accepts each connection (the connection cap);
 * with TLS, a `tls.Server` that never listens does the handshake (cut at the
 * head timeout); then the connection's first bytes decide where it goes,
 * TLS or not: the HTTP/2 preface to the app's HTTP/2 server (gRPC, Connect
 * over HTTP/2), anything else to an HTTP/1.1 server that routes into the
 * same app (REST, Connect, gRPC-Web). So the first-bytes, head and body
 * timeouts, the HTTP/2 guards and the drain hold alike over TLS and cleartext.
 * Near the connection cap, the connections idle longest are closed so that
 * a new caller always gets in (edge/idle-connections.ts).
 *
 * The peek uses `once("readable")` + `read()` + `unshift()`: attaching a
 * 'data' listener would switch the socket to flowing mode and break HTTP/2.
 */
export function servePort(app: App, options: OnePortOptions = {}): OnePortServer {
  const h2 = app.server;
  const edge = options.edge ?? edgeConfig({});
  const maxConnections = options.maxConnections ?? MAX_CONNECTIONS;
  const idle = new IdleConnections();
  const unsent = new UnsentBytes(edge, idle);
  // Fastify's router serves HTTP/1.1 requests as well as HTTP/2 ones; its
  // types know only the server the app was built on. This hand-over is the
  // one place that says otherwise, hence the cast.
  const routeHttp1 = app.routing as unknown as Http1Handler;
  const h1 = http1Connections(routeHttp1, {
    edge,
    idle,
    unsent,
    requestReadLimitMs: app.requestReadLimitMs,
  });
  const sessions = new Set<Http2Session>();
  const timers = new SessionTimers();
  offerStreams(h2, app.streamPath);
  const unfinished = new UnfinishedRequests(app.requestReadLimitMs);
  h2.on("session", (session: Http2Session) => {
    sessions.add(session);
    timers.watch(session);
    const resets = guardResets(session);
    const pieces = guardBodyPieces(session);
    const answers = unsent.watch(session);
    // Idle while no stream is open: a candidate for closing near the cap.
    let open = 0;
    idle.idle(session);
    // Each stream's guards, with one listener for its close: a stream costs
    // what it is watched for, not a listener and a timer per guard.
    session.on(
      "stream",
      (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number) => {
        open++;
        idle.busy(session);
        resetAfterTrailers(stream);
        // END_STREAM on the HEADERS: a request without a body, ended already.
        const body = (flags & h2constants.NGHTTP2_FLAG_END_STREAM) === 0;
        if (body) pieces(stream);
        const closeResets = resets(stream);
        const closeAnswers = answers(stream);
        const closeRequest = body ? unfinished.add(stream, headers) : undefined;
        stream.once("close", () => {
          open--;
          if (open === 0 && !session.destroyed) idle.idle(session);
          closeResets?.();
          closeAnswers?.();
          closeRequest?.();
        });
      },
    );
    session.once("close", () => {
      sessions.delete(session);
      idle.gone(session);
    });
  });

  const handOver = (socket: Socket) => {
    idle.idle(socket);
    socket.once("close", () => idle.gone(socket));
    route(socket, (http2) => {
      // From here the HTTP/2 session stands for the connection.
      if (http2) idle.gone(socket);
      (http2 ? h2 : h1.server).emit("connection", socket);
    });
  };
  const tls = options.tls
    ? createTlsServer(
        {
          cert: readFileSync(options.tls.certFile),
          key: readFileSync(options.tls.keyFile),
          ALPNProtocols: ["h2", "http/1.1"],
          // A client that never finishes its handshake is dropped as one that never speaks.
          handshakeTimeout: FIRST_BYTES_TIMEOUT_MS,
        },
        (socket: TLSSocket) => {
          // The TLS socket stands for the connection from here (TLSSocket's `_parent` is the raw one).
          const raw = (socket as TLSSocket & { _parent?: Socket })._parent;
          if (raw) idle.gone(raw);
          handOver(socket);
        },
      )
    : undefined;
  tls?.on("tlsClientError", (_err, socket) => socket.destroy());

  const sockets = new Set<Socket>();
  // No Nagle delay on small writes: Node's HTTP/1.1 server asks for it as it
  // accepts a socket, which here the front server does (HTTP/2 sets its own).
  // Above this many connections, each new one closes the one idle longest.
  const pressure = Math.floor(maxConnections * CLOSE_IDLE_ABOVE);
  const server = createNetServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      idle.gone(socket);
    });
    if (sockets.size > pressure) idle.closeOldest(sockets.size, pressure);
    if (tls) {
      // Until its handshake is done, a TLS connection is idle as itself.
      idle.idle(socket);
      tls.emit("connection", socket);
    } else handOver(socket);
  });

  // A flood of connections is refused at once, before descriptors run out.
  server.maxConnections = maxConnections;

  return {
    server,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, LISTEN_BACKLOG, () => {
          server.off("error", reject);
          resolve();
        });
      }),
    async close(timeoutMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      app.streamPath?.drain();
      h1.drain();
      // GOAWAY: HTTP/2 clients open no new stream here; open ones finish.
      for (const session of sessions) session.close();
      await waitUntil(() => sockets.size === 0, timeoutMs);
      h1.stop();
      unfinished.stop();
      timers.stop();
      const cut = sockets.size;
      for (const socket of sockets) socket.destroy();
      await closed;
      await app.close();
      return cut;
    },
  };
}

type StreamListener = (
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  flags: number,
  rawHeaders: string[],
) => void;

/**
 * Offers each new HTTP/2 stream to `path` first (app-server.ts, StreamPath);
 * what it leaves goes on to the server's own listener, the compatibility
 * layer that makes Fastify's request and response of it.
 */
function offerStreams(h2: App["server"], path: StreamPath | null): void {
  if (path === null) return;
  const compat = h2.listeners("stream") as StreamListener[];
  h2.removeAllListeners("stream");
  h2.on("stream", (stream, headers, flags, rawHeaders) => {
    if (path.take(stream, headers, rawHeaders)) return;
    for (const listener of compat) listener.call(h2, stream, headers, flags, rawHeaders);
  });
}

/**
 * Waits for a connection's first bytes (dropping it if none come within
 * FIRST_BYTES_TIMEOUT_MS), then hands it over: `http2` if they are the
 * HTTP/2 preface.
 */
function route(socket: Socket, handOver: (http2: boolean) => void) {
  let head = Buffer.alloc(0);
  const drop = () => socket.destroy();
  socket.on("error", drop);
  socket.setTimeout(FIRST_BYTES_TIMEOUT_MS, drop);
  const onReadable = () => {
    const chunk: Buffer | null = socket.read();
    if (chunk !== null) head = Buffer.concat([head, chunk]);
    const undecided = head.length < PREFACE.length && head.equals(PREFACE.subarray(0, head.length));
    if (undecided && !socket.readableEnded) {
      socket.once("readable", onReadable);
      return;
    }
    socket.off("error", drop);
    socket.setTimeout(0);
    socket.unshift(head);
    handOver(head.subarray(0, PREFACE.length).equals(PREFACE));
  };
  socket.once("readable", onReadable);
}

async function waitUntil(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
