import type { Http2Session } from "node:http2";
import { HTTP2_SESSION_IDLE_MS, REQUEST_HEAD_TIMEOUT_MS } from "../limits.js";

/** How often sessions are looked at for idleness: the idle limit is a minute and more. */
const SWEEP_MS = 1000;

/**
 * An HTTP/2 session earns its connection slot as an HTTP/1.1 connection
 * does, by asking: one that has opened no stream within
 * REQUEST_HEAD_TIMEOUT_MS of its preface is destroyed, as an HTTP/1.1
 * connection that sends no head is closed. One idle (no byte either way)
 * for HTTP2_SESSION_IDLE_MS is closed with GOAWAY; answers it still owes
 * and cannot send are the unsent-bytes guard's (edge/unsent-bytes.ts).
 *
 * Idleness is one sweep for every session, not `session.setTimeout`: Node
 * marks a session destroyed before it clears that timer, so the timer is
 * never cleared and holds every destroyed session for the whole idle time
 * (18,000 sessions, 125 MB of heap, after a flood of connections that
 * sent only the preface).
 */
export class SessionTimers {
  /** Each session's bytes at the last look, and since when they have not changed. */
  readonly #idle = new Map<Http2Session, { bytes: number; since: number }>();
  #sweep: NodeJS.Timeout | undefined;

  constructor(
    private readonly headTimeoutMs = REQUEST_HEAD_TIMEOUT_MS,
    private readonly idleMs = HTTP2_SESSION_IDLE_MS,
  ) {}

  watch(session: Http2Session): void {
    const firstStream = setTimeout(() => {
      if (!session.destroyed) session.destroy();
    }, this.headTimeoutMs);
    firstStream.unref();
    session.once("stream", () => clearTimeout(firstStream));
    this.#idle.set(session, { bytes: bytesOf(session), since: performance.now() });
    this.#sweep ??= setInterval(() => this.sweep(), SWEEP_MS).unref();
    session.once("close", () => {
      clearTimeout(firstStream);
      this.#idle.delete(session);
      if (this.#idle.size === 0) this.stop();
    });
  }

  /** Closes the sessions idle for the idle limit (every SWEEP_MS; tests may call it). */
  sweep(now = performance.now()): void {
    for (const [session, idle] of this.#idle) {
      const bytes = bytesOf(session);
      if (bytes !== idle.bytes) {
        idle.bytes = bytes;
        idle.since = now;
      } else if (now - idle.since >= this.idleMs && !session.closed) {
        session.close();
      }
    }
  }

  stop(): void {
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }
}

/** What has crossed the session's connection, either way. */
function bytesOf(session: Http2Session): number {
  const socket = session.socket;
  return socket ? socket.bytesRead + socket.bytesWritten : 0;
}
