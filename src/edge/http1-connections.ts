import {
  createServer,
  type Server as Http1Server,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import type { Socket } from "node:net";
import type { EdgeConfig } from "../config.js";
import {
  DRAIN_IDLE_MS,
  MAX_CONCURRENT_STREAMS,
  MAX_HEADER_BYTES,
  REQUEST_HEAD_TIMEOUT_MS,
} from "../limits.js";
import { answerClientError } from "./head-refusals.js";
import type { IdleConnections } from "./idle-connections.js";
import { watchBodyPieces } from "./small-pieces.js";
import type { UnsentBytes } from "./unsent-bytes.js";

/** An HTTP/1.1 request handed to the app (Fastify's router). */
export type Http1Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** One HTTP/1.1 connection: its answer in progress, the pipelined requests behind it. */
interface Connection {
  socket: Socket;
  answering: boolean;
  /** Requests the client pipelined behind the answer in progress, oldest first. */
  waiting: [IncomingMessage, ServerResponse][];
  /** When it last finished an answer (or connected), while it has none in progress. */
  idleSince: number | undefined;
  /**
   * Its client has sent a request while an answer was in progress: it does
   * not wait for answers, so answers it never reads may sit in the kernel's
   * buffers, where no stall shows. Idle, it is closed after the write stall.
   */
  pipelined: boolean;
  /** What the unsent-bytes guard calls as it closes. */
  unwatch: () => void;
}

export interface Http1Connections {
  /** The server the front listener hands HTTP/1.1 sockets to. */
  server: Http1Server;
  /**
   * From now on every answer says `Connection: close`, and a connection idle
   * for DRAIN_IDLE_MS is closed (a client reusing one right now would get a
   * reset, so it gets its answer with `Connection: close` instead).
   */
  drain(): void;
  /** Ends the drain's sweep and Node's connection checks (after the drain). */
  stop(): void;
}

/**
 * The HTTP/1.1 side of the port: keep-alive connections, each answering one
 * request at a time. Requests a client pipelines wait, unrouted, until the
 * answer before them is out (handed to the kernel): a client that does not
 * read makes the service compute one answer, not all it asked for, and its
 * unsent bytes are the unsent-bytes guard's like HTTP/2's (a stalled one is
 * reset). More than MAX_CONCURRENT_STREAMS waiting ends the connection, as
 * HTTP/2 bounds the streams a connection has open. The client's FIN means
 * it has left (as nginx and Go's net/http take it): the connection ends,
 * and its call stops or never begins (edge/call.ts).
 */
export function http1Connections(
  handle: Http1Handler,
  options: {
    edge: EdgeConfig;
    idle: IdleConnections;
    unsent: UnsentBytes;
    /** How long a whole request may take to arrive (edge/call-limits.ts). */
    requestReadLimitMs: number;
  },
): Http1Connections {
  const { idle, unsent } = options;
  const connections = new Map<Socket, Connection>();
  // Answers not yet begun: a drain makes them say `Connection: close` too.
  const pending = new Set<ServerResponse>();
  let draining = false;
  let drainSweep: NodeJS.Timeout | undefined;
  let pipelineSweep: NodeJS.Timeout | undefined;
  const writeStallMs = options.edge.writeStallMs;

  const isIdle = (conn: Connection) => {
    conn.idleSince = performance.now();
    idle.idle(conn.socket);
  };
  const answer = (conn: Connection, req: IncomingMessage, res: ServerResponse) => {
    const socket = conn.socket;
    conn.answering = true;
    conn.idleSince = undefined;
    idle.busy(socket);
    // Every HTTP/1.1 answer of a drain says `Connection: close`, and Node
    // closes the connection after it.
    if (draining) res.shouldKeepAlive = false;
    else pending.add(res);
    res.once("close", () => {
      pending.delete(res);
      conn.answering = false;
      if (socket.destroyed) return;
      const next = conn.waiting.shift();
      if (next === undefined) isIdle(conn);
      else answer(conn, ...next);
    });
    // Answered before its body was all read (refused at the door, past its
    // deadline): the connection closes after the answer. Otherwise Node would
    // go on reading the rest for the next request, and a body that never
    // comes would get a second answer (408) on the same connection.
    if (req.headers["content-length"] !== undefined || req.headers["transfer-encoding"]) {
      res.once("finish", () => {
        if (!req.complete) socket.destroySoon();
      });
      // A body in a flood of tiny chunks: the connection goes, nothing is answered.
      watchBodyPieces(req, () => socket.destroy());
    }
    handle(req, res);
  };

  const server = createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      // Slow senders are cut off with 408 (Node checks every connectionsCheckingInterval).
      headersTimeout: REQUEST_HEAD_TIMEOUT_MS,
      // A whole request, as long as a call may take (edge/call-limits.ts).
      requestTimeout: options.requestReadLimitMs,
      connectionsCheckingInterval: 1000,
    },
    (req, res) => {
      const conn = connections.get(req.socket);
      if (conn === undefined) return handle(req, res);
      if (!conn.answering) return answer(conn, req, res);
      if (conn.waiting.length >= MAX_CONCURRENT_STREAMS) return conn.socket.destroy();
      conn.waiting.push([req, res]);
      conn.pipelined = true;
      // Every second while a pipelining client is connected: one idle for the
      // write stall since its answers went out is ended, with a reset that
      // drops what the kernel still holds for it.
      pipelineSweep ??= setInterval(() => {
        const now = performance.now();
        let pipelining = 0;
        for (const c of connections.values()) {
          if (!c.pipelined) continue;
          pipelining++;
          if (c.idleSince !== undefined && now - c.idleSince >= writeStallMs) unsent.drop(c.socket);
        }
        if (pipelining === 0) {
          clearInterval(pipelineSweep);
          pipelineSweep = undefined;
        }
      }, 1000).unref();
    },
  );
  server.keepAliveTimeout = options.edge.keepAliveTimeoutMs;
  server.on("connection", (socket: Socket) => {
    const conn: Connection = {
      socket,
      answering: false,
      waiting: [],
      idleSince: undefined,
      pipelined: false,
      unwatch: unsent.watchSocket(socket),
    };
    connections.set(socket, conn);
    isIdle(conn);
    // The client's FIN: it has left. Its calls stop, and no answer is written.
    socket.once("end", () => socket.destroy());
    socket.once("close", () => {
      connections.delete(socket);
      idle.busy(socket);
      conn.unwatch();
    });
  });
  // This server never listens (the front server hands it sockets), and Node
  // tracks HTTP/1.1 connections only from "listening" on: without this,
  // headersTimeout / requestTimeout are never enforced.
  server.emit("listening");
  // Requests Node's parser refuses (a head over the limit, bytes that are
  // not HTTP) get problem+json too.
  server.on("clientError", answerClientError);

  return {
    server,
    drain() {
      draining = true;
      for (const res of pending) if (!res.headersSent) res.shouldKeepAlive = false;
      drainSweep = setInterval(() => {
        const now = performance.now();
        for (const conn of connections.values()) {
          if (conn.idleSince !== undefined && now - conn.idleSince >= DRAIN_IDLE_MS) {
            conn.socket.destroySoon();
          }
        }
      }, 100);
    },
    stop() {
      clearInterval(drainSweep);
      clearInterval(pipelineSweep);
      // Stops the connection-tracking timer; it never listened, so no error matters.
      server.close(() => {});
    },
  };
}
