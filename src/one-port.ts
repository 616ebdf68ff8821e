import {
  createServer as createHttp1Server,
  type Server as Http1Server,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import {
  constants,
  type Http2Server,
  type Http2Session,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
} from "node:http2";
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import type { App } from "./app-server.js";
import {
  DRAIN_IDLE_MS,
  FIRST_BYTES_TIMEOUT_MS,
  MAX_CONNECTIONS,
  MAX_HEADER_BYTES,
  REQUEST_HEAD_TIMEOUT_MS,
  REQUEST_READ_TIMEOUT_MS,
} from "./limits.js";
import { guardHttp2Session } from "./ops/http2-guard.js";
import { answerClientError } from "./rest/head-refusals.js";

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
  /** Connections held at once; beyond, a new one is closed as it comes. Default MAX_CONNECTIONS. */
  maxConnections?: number;
}

/**
 * Serves `app` on one TCP port. With TLS, ALPN picks h2 or http/1.1 in the
 * app's own secure server. In cleartext, a front `net.Server` peeks at each
 * connection's first bytes: the HTTP/2 preface goes to the app's h2c server
 * (gRPC, Connect over HTTP/2), anything else to an HTTP/1.1 server that
 * routes into the same app (REST, Connect, gRPC-Web).
 *
 * The peek uses `once("readable")` + `read()` + `unshift()`: attaching a
 * 'data' listener would switch the socket to flowing mode and break HTTP/2.
 */
export function servePort(app: App, tls: boolean, options: OnePortOptions = {}): OnePortServer {
  const h2 = app.server;
  // Fastify's router serves HTTP/1.1 requests as well as HTTP/2 ones (over
  // TLS, the secure server's allowHTTP1 hands it both); its types know only
  // the server the app was built on. This hand-over is the one place that
  // says otherwise, hence the cast.
  const routeHttp1 = app.routing as unknown as (req: IncomingMessage, res: ServerResponse) => void;
  // When each HTTP/1.1 connection last finished a response (or connected):
  // the drain closes only connections idle for DRAIN_IDLE_MS.
  const idleSince = new WeakMap<Socket, number>();
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
      res.once("close", () => idleSince.set(socket, performance.now()));
      routeHttp1(req, res);
    },
  );
  h1.on("connection", (socket: Socket) => idleSince.set(socket, performance.now()));
  // This server never listens (the front server hands it sockets), and Node
  // tracks HTTP/1.1 connections only from "listening" on: without this,
  // headersTimeout / requestTimeout are never enforced.
  h1.emit("listening");
  // Requests Node's parser refuses (a head over the limit, bytes that are
  // not HTTP) get problem+json too; with TLS, HTTP/1.1 is the h2 server's.
  h1.on("clientError", answerClientError);
  if (tls) h2.on("clientError", answerClientError);
  const sockets = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  h2.on("session", (session: Http2Session) => {
    sessions.add(session);
    guardHttp2Session(session);
    session.once("close", () => sessions.delete(session));
  });
  h2.on("stream", cutOffUnfinished);

  // No Nagle delay on small writes: Node's HTTP/1.1 server asks for it as it
  // accepts a socket, which here the front server does (HTTP/2 sets its own).
  const server = createNetServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    if (tls) {
      h2.emit("connection", socket);
      return;
    }
    route(socket, h2, h1);
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
      // GOAWAY: HTTP/2 clients open no new stream here; open ones finish.
      for (const session of sessions) session.close();
      // Every HTTP/1.1 answer from now on says `Connection: close`, and Node
      // closes the connection after it. First among the listeners: a handler
      // may answer at once, and a header set after that throws ERR_HTTP_HEADERS_SENT.
      h1.prependListener("request", (_req, res) => res.setHeader("connection", "close"));
      // Idle keep-alive connections are closed only once idle for a while: a
      // client reusing one right now would get a reset, so it gets its answer
      // with `Connection: close` instead.
      const idleSweep = setInterval(() => {
        const now = performance.now();
        for (const socket of sockets) {
          const since = idleSince.get(socket);
          if (since !== undefined && now - since >= DRAIN_IDLE_MS) socket.destroySoon();
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

function route(socket: Socket, h2: Http2Server, h1: Http1Server) {
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
    const isHttp2 = head.subarray(0, PREFACE.length).equals(PREFACE);
    (isHttp2 ? h2 : h1).emit("connection", socket);
  };
  socket.once("readable", onReadable);
}

async function waitUntil(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
