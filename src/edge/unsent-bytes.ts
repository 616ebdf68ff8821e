import type { ServerResponse } from "node:http";
import {
  constants,
  type Http2ServerResponse,
  type Http2Session,
  type ServerHttp2Stream,
} from "node:http2";
import type { Socket } from "node:net";
import type { IdleConnections } from "./idle-connections.js";

/** How often the unsent bytes of every HTTP/2 answer are looked at. */
const SWEEP_MS = 250;

/**
 * Fastify writes an HTTP/2 answer in pieces of this size, each once the
 * last has gone ('drain'), keeping the rest in its own buffer: what it
 * still holds is the declared length less the pieces drained.
 */
const FASTIFY_PIECE_BYTES = 64 * 1024;

/**
 * A session over its unsent budget whose answers have not moved for this
 * long takes no new call (nor do those under it stalled for a quarter of
 * the stall limit): its client is not reading now, and another answer would
 * only wait with the others. A client that reads moves a piece at a time
 * and is never refused.
 */
const STALLED_REFUSES_AFTER_MS = 250;

/** The limits on unsent bytes (EdgeConfig's, src/config.ts). */
export interface UnsentLimits {
  /** An answer, or a whole connection, whose unsent bytes do not move for this long is dropped. */
  writeStallMs: number;
  /** What one HTTP/2 session may hold unsent; over it, its new streams are refused. */
  sessionUnsentMaxBytes: number;
  /** What all connections together may hold unsent; beyond, the largest stalled ones go. */
  unsentMaxBytes: number;
}

interface StreamWatch {
  stream: ServerHttp2Stream;
  /** Unsent bytes at the last look. */
  unsent: number;
  /** When its unsent bytes last went down (or it had none). */
  movedAt: number;
  /** Bytes that went out in pieces a writer waited for ('drain'). */
  drained: number;
}

/** What every watched connection has: its bytes, their clock, and whether it is stalled. */
interface ConnectionWatch {
  unsent: number;
  movedAt: number;
  /** Holding bytes that have not moved for STALLED_REFUSES_AFTER_MS: a candidate for closing near the cap. */
  stalled: boolean;
  destroyed(): boolean;
  /** Drops the connection and what it holds. */
  drop(): void;
}

/** An HTTP/1.1 connection: one answer at a time (edge/http1-connections.ts), in its socket. */
interface SocketWatch extends ConnectionWatch {
  socket: Socket;
}

interface SessionWatch extends ConnectionWatch {
  session: Http2Session;
  streams: Map<ServerHttp2Stream, StreamWatch>;
  /** Over its budget or stalled at the last look: it takes no new call. */
  refusing: boolean;
  /** Whether any of its answers went out since the last look ('drain' or fewer bytes). */
  moved: boolean;
  /** What one session may hold unsent (the limits'). */
  budget: number;
  /** Calls waiting for room for their answer (`roomForAnswer`): told at its next move. */
  waiting: (() => void)[];
}

/** The watched sessions, for `roomForAnswer`. */
const watched = new WeakMap<Http2Session, SessionWatch>();

/**
 * Undefined if `res`'s session has room for another answer (it holds less
 * than `sessionUnsentMaxBytes` unsent), else a promise that resolves when
 * any of its bytes move (a piece drained, an answer ended, the session
 * closed). A call waits for it before its work (admission ends the wait if
 * the call stops), so no answer is computed for a session that cannot take
 * it now, and none is refused: a reader's bytes keep moving.
 */
export function roomForAnswer(
  res: ServerResponse | Http2ServerResponse | ServerHttp2Stream,
): Promise<void> | undefined {
  const session = "stream" in res ? res.stream.session : "session" in res ? res.session : undefined;
  const watch = session === undefined ? undefined : watched.get(session);
  if (watch === undefined) return undefined;
  let unsent = 0;
  for (const w of watch.streams.values()) unsent += unsentOf(w.stream, w.drained);
  if (unsent < watch.budget) return undefined;
  return new Promise((resolve) => watch.waiting.push(resolve));
}

/**
 * Lets every call waiting for room in `watch` go on: each looks again once it
 * has a slot again. `progress`: its client took bytes (a piece drained, an
 * answer finished), which restarts the session's stall clock; a stream reset
 * or refused frees room without being progress.
 */
function moved(watch: SessionWatch, progress = true): void {
  if (progress) watch.moved = true;
  if (watch.waiting.length === 0) return;
  const waiting = watch.waiting;
  watch.waiting = [];
  for (const done of waiting) done();
}

/**
 * Bounds what answers hold in memory while a client does not read them, on HTTP/2 and
 * HTTP/1.1 alike: stalled answers reset, stalled connections destroyed, the largest first
 * beyond `unsentMaxBytes`, a session over its share refused new streams (docs/decisions.md).
 */
export class UnsentBytes {
  readonly #sessions = new Set<SessionWatch>();
  readonly #sockets = new Set<SocketWatch>();
  #sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly limits: UnsentLimits,
    private readonly idle?: IdleConnections,
  ) {}

  /** Watches an HTTP/1.1 connection's unsent bytes; returns what to call as it closes. */
  watchSocket(socket: Socket): () => void {
    const watch: SocketWatch = {
      socket,
      unsent: 0,
      movedAt: performance.now(),
      stalled: false,
      destroyed: () => socket.destroyed,
      drop: () => this.drop(socket),
    };
    this.#sockets.add(watch);
    this.#startSweep();
    return () => {
      this.#sockets.delete(watch);
      this.#stopWhenNone();
    };
  }

  /**
   * Watches `session`'s answers until it closes. Returns what to call as
   * each stream opens, which returns what to call as it closes.
   */
  watch(session: Http2Session): (stream: ServerHttp2Stream) => (() => void) | undefined {
    const watch: SessionWatch = {
      session,
      streams: new Map(),
      unsent: 0,
      movedAt: performance.now(),
      stalled: false,
      destroyed: () => session.destroyed,
      drop: () => session.destroy(),
      moved: false,
      refusing: false,
      budget: this.limits.sessionUnsentMaxBytes,
      waiting: [],
    };
    this.#sessions.add(watch);
    watched.set(session, watch);
    session.once("close", () => {
      this.#sessions.delete(watch);
      moved(watch);
      this.#stopWhenNone();
    });
    this.#startSweep();
    return (stream) => {
      if (watch.refusing) {
        stream.close(constants.NGHTTP2_REFUSED_STREAM);
        return undefined;
      }
      const w: StreamWatch = { stream, unsent: 0, movedAt: performance.now(), drained: 0 };
      watch.streams.set(stream, w);
      // A piece went out: progress, whatever the next piece's size.
      stream.on("drain", () => {
        w.drained += FASTIFY_PIECE_BYTES;
        w.movedAt = performance.now();
        moved(watch);
      });
      return () => {
        watch.streams.delete(stream);
        // Answered whole (NO_ERROR) is progress; refused or reset, only room.
        moved(watch, stream.rstCode === constants.NGHTTP2_NO_ERROR);
      };
    };
  }

  /** Looks at every answer's unsent bytes once (every SWEEP_MS; tests may call it). */
  sweep(now = performance.now()): void {
    const { writeStallMs, unsentMaxBytes } = this.limits;
    let total = 0;
    for (const watch of this.#sockets) {
      const n = watch.socket.writableLength;
      // New bytes start the clock as well: it counts from when they were written.
      if (n === 0 || n !== watch.unsent) watch.movedAt = now;
      watch.unsent = n;
      if (this.#stalledFor(watch, now) >= writeStallMs) watch.drop();
      else total += n;
    }
    // Over values, not entries: a sweep looks at every stream four times a
    // second, and an entry is an array allocated each time.
    for (const watch of this.#sessions) {
      const session = watch.session;
      let unsent = 0;
      for (const w of watch.streams.values()) {
        const n = unsentOf(w.stream, w.drained);
        if (n < w.unsent) moved(watch);
        // New bytes start the clock as well: it counts from when they were written.
        if (n === 0 || n !== w.unsent) w.movedAt = now;
        w.unsent = n;
        unsent += n;
      }
      watch.unsent = unsent;
      if (watch.moved || unsent === 0) watch.movedAt = now;
      watch.moved = false;
      const stalledMs = this.#stalledFor(watch, now);
      if (stalledMs >= writeStallMs) {
        session.destroy();
        continue;
      }
      // Over its budget or stalled, the session's calls not yet answering are
      // refused too: their answers would only wait with the others.
      watch.refusing =
        stalledMs >= STALLED_REFUSES_AFTER_MS &&
        (unsent >= this.limits.sessionUnsentMaxBytes || stalledMs >= writeStallMs / 4);
      for (const w of watch.streams.values()) {
        const stream = w.stream;
        if (watch.refusing && !stream.headersSent) {
          stream.close(constants.NGHTTP2_REFUSED_STREAM);
          continue;
        }
        if (w.unsent > 0 && now - w.movedAt >= writeStallMs) {
          // RST_STREAM is not flow-controlled: it goes out, and the stream's bytes are freed.
          stream.close(constants.NGHTTP2_CANCEL);
          watch.unsent -= w.unsent;
        }
      }
      total += watch.unsent;
    }
    if (total <= unsentMaxBytes) return;
    const stalled = [...this.#sessions, ...this.#sockets]
      .filter((w) => w.movedAt < now && w.unsent > 0 && !w.destroyed())
      .sort((a, b) => b.unsent - a.unsent);
    for (const w of stalled) {
      if (total <= unsentMaxBytes) break;
      total -= w.unsent;
      w.drop();
    }
  }

  /**
   * How long `watch`'s unsent bytes have not moved (0 if it holds none);
   * past STALLED_REFUSES_AFTER_MS it is a candidate for closing near the cap.
   */
  #stalledFor(watch: ConnectionWatch, now: number): number {
    const ms = watch.unsent > 0 ? now - watch.movedAt : 0;
    const stalled = ms >= STALLED_REFUSES_AFTER_MS;
    if (stalled !== watch.stalled && !watch.destroyed()) {
      const held =
        "socket" in watch ? (watch as SocketWatch).socket : (watch as SessionWatch).session;
      this.idle?.stalled(held, stalled);
    }
    watch.stalled = stalled;
    return ms;
  }

  /** Ends an HTTP/1.1 connection with a reset: the kernel's copy of what its client never read goes too. */
  drop(socket: Socket): void {
    if ("encrypted" in socket) socket.destroy();
    else socket.resetAndDestroy();
  }

  #startSweep(): void {
    this.#sweep ??= setInterval(() => this.sweep(), SWEEP_MS).unref();
  }

  #stopWhenNone(): void {
    if (this.#sessions.size > 0 || this.#sockets.size > 0) return;
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }
}

/**
 * What `stream` holds unsent: what its writable side holds, or, while a
 * writer still holds the rest of a declared length (Fastify's pieces), that
 * length less what has drained. Nothing once all is written.
 */
function unsentOf(stream: ServerHttp2Stream, drained: number): number {
  if (stream.writableFinished || stream.destroyed) return 0;
  const declared = stream.headersSent ? Number(stream.sentHeaders["content-length"] ?? 0) : 0;
  return Math.max(stream.writableLength, declared - drained);
}
