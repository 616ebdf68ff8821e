import { readFileSync } from "node:fs";
import {
  createServer as createHttp1Server,
  type Server as Http1Server,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import {
  constants,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, type TLSSocket } from "node:tls";
import type { App, TlsFiles } from "../app-server.js";
import {
  DRAIN_IDLE_MS,
  FIRST_BYTES_TIMEOUT_MS,
  MAX_CONNECTIONS,
  MAX_HEADER_BYTES,
  REQUEST_HEAD_TIMEOUT_MS,
  REQUEST_READ_TIMEOUT_MS,
} from "../limits.js";
import { guardHttp2Session } from "../ops/http2-guard.js";
import { answerClientError } from "./head-refusals.js";

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
}

/**
 * Serves `app` on one TCP port: the service's edge, the same for every way
 * in. A front `net.Server` accepts each connection (the connection cap);
 * with TLS, a `tls.Server` that never listens does the handshake (cut at the
 * head timeout); then the connection's first bytes decide where it goes,
 * TLS or not: the HTTP/2 preface to the app's HTTP/2 server (gRPC, Connect
 * over HTTP/2), anything else to an HTTP/1.1 server that routes into the
 * same app (REST, Connect, gRPC-Web). So the first-bytes, head and body
 * timeouts, the HTTP/2 guard and the drain hold alike over TLS and cleartext.
 *
 * The peek uses `once("readable")` + `read()` + `unshift()`: attaching a
 * 'data' listener would switch the socket to flowing mode and break HTTP/2.
 */
export function servePort(app: App, options: OnePortOptions = {}): OnePortServer {
  const h2 = app.server;
  // Fastify's router serves HTTP/1.1 requests as well as HTTP/2 ones; its
  // types know only the server the app was built on. This hand-over is the
  // one place that says otherwise, hence the cast.
  const routeHttp1 = app.routing as unknown as (req: IncomingMessage, res: ServerResponse) => void;
  // When each HTTP/1.1 connection last finished a response (or connected):
  // the drain closes only connections idle for DRAIN_IDLE_MS.
  const idleSince = new Map<Socket, number>();
  // Answers not yet begun: a drain makes them say `Connection: close` too.
  const pending = new Set<ServerResponse>();
  let draining = false;
  const h1: Http1Server = createHttp1Server(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      // Slow senders are cut off with 408 (Node checks every connectionsCheckingInterval).
      headersTimeout: REQUEST_HEAD_TIMEOUT_MS,
      requestTimeout: REQUEST_READ_TIMEOUT_MS,
      connectionsCheckingInterval: 1000,
    },
    (req, res) => {
      const socket = req.socket;
      idleSince.delete(socket);
      // Every HTTP/1.1 answer of a drain says `Connection: close`, and Node
      // closes the connection after it.
      if (draining) res.shouldKeepAlive = false;
      else pending.add(res);
      res.once("close", () => {
        pending.delete(res);
        if (!socket.destroyed) idleSince.set(socket, performance.now());
      });
      // Answered before its body was all read (refused at the door, past its
      // deadline): the connection closes after the answer. Otherwise Node would
      // go on reading the rest for the next request, and a body that never
      // comes would get a second answer (408) on the same connection.
      if (req.headers["content-length"] !== undefined || req.headers["transfer-encoding"]) {
        res.once("finish", () => {
          if (!req.complete) socket.destroySoon();
        });
      }
      routeHttp1(req, res);
    },
  );
  h1.on("connection", (socket: Socket) => {
    idleSince.set(socket, performance.now());
    socket.once("close", () => idleSince.delete(socket));
  });
  // This server never listens (the front server hands it sockets), and Node
  // tracks HTTP/1.1 connections only from "listening" on: without this,
  // headersTimeout / requestTimeout are never enforced.
  h1.emit("listening");
  // Requests Node's parser refuses (a head over the limit, bytes that are
  // not HTTP) get problem+json too.
  h1.on("clientError", answerClientError);
  const sessions = new Set<Http2Session>();
  h2.on("session", (session: Http2Session) => {
    sessions.add(session);
    guardHttp2Session(session);
    session.once("close", () => sessions.delete(session));
  });
  h2.on("stream", cutOffUnfinished);

  const handOver = (socket: Socket) =>
    route(socket, (http2) => (http2 ? h2 : h1).emit("connection", socket));
  const tls = options.tls
    ? createTlsServer(
        {
          cert: readFileSync(options.tls.certFile),
          key: readFileSync(options.tls.keyFile),
          ALPNProtocols: ["h2", "http/1.1"],
          // A client that never finishes its handshake is dropped as one that never speaks.
          handshakeTimeout: FIRST_BYTES_TIMEOUT_MS,
        },
        (socket: TLSSocket) => handOver(socket),
      )
    : undefined;
  tls?.on("tlsClientError", (_err, socket) => socket.destroy());

  const sockets = new Set<Socket>();
  // No Nagle delay on small writes: Node's HTTP/1.1 server asks for it as it
  // accepts a socket, which here the front server does (HTTP/2 sets its own).
  const server = createNetServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    if (tls) tls.emit("connection", socket);
    else handOver(socket);
  });

  // A flood of connections is refused at once, before descriptors run out.
  server.maxConnections = options.maxConnections ?? MAX_CONNECTIONS;

  return {
    server,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          resolve();
        });
      }),
    async close(timeoutMs) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      draining = true;
      for (const res of pending) if (!res.headersSent) res.shouldKeepAlive = false;
      // GOAWAY: HTTP/2 clients open no new stream here; open ones finish.
      for (const session of sessions) session.close();
      // Idle keep-alive connections are closed only once idle for a while: a
      // client reusing one right now would get a reset, so it gets its answer
      // with `Connection: close` instead.
      const idleSweep = setInterval(() => {
        const now = performance.now();
        for (const [socket, since] of idleSince) {
          if (now - since >= DRAIN_IDLE_MS) socket.destroySoon();
        }
      }, 100);
      await waitUntil(() => sockets.size === 0, timeoutMs);
      clearInterval(idleSweep);
      const cut = sockets.size;
      for (const socket of sockets) socket.destroy();
      await closed;
      // Stops the connection-tracking timer; it never listened, so no error matters.
      h1.close(() => {});
      await app.close();
      return cut;
    },
  };
}

/**
 * An HTTP/2 request that has not ended (END_STREAM) within
 * REQUEST_READ_TIMEOUT_MS is reset (CANCEL): a slow or stalled sender
 * holds a stream of its connection's 100 for seconds, not forever.
 * Reflection is a conversation whose request stays open on purpose.
 */
function cutOffUnfinished(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  flags: number,
): void {
  // END_STREAM on the HEADERS: a request without a body, ended already.
  if (flags & constants.NGHTTP2_FLAG_END_STREAM) return;
  if (headers[":path"]?.startsWith(LONG_REQUESTS)) return;
  const timer = setTimeout(() => {
    if (!stream.readableEnded && !stream.destroyed) stream.close(constants.NGHTTP2_CANCEL);
  }, REQUEST_READ_TIMEOUT_MS);
  timer.unref();
  const clear = () => clearTimeout(timer);
  stream.once("end", clear);
  stream.once("close", clear);
}

/** Paths whose requests last as long as the conversation (bidirectional streams). */
const LONG_REQUESTS = "/grpc.reflection.";

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
