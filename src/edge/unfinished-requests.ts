import { constants, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";

/** Paths whose requests last as long as the conversation (bidirectional streams). */
const LONG_REQUESTS = "/grpc.reflection.";

/** How often unfinished requests are looked at: Node's own check of HTTP/1.1 requests is as coarse. */
const SWEEP_MS = 1000;

/**
 * HTTP/2 requests that have not ended (END_STREAM) within `readLimitMs` are
 * reset (CANCEL): a slow or stalled sender holds a stream of its
 * connection's 100 for as long as a call may take, not forever. One sweep
 * a second for all of them, not a timer each. Reflection is a conversation
 * whose request stays open on purpose.
 */
export class UnfinishedRequests {
  /** Each request still arriving, with when it opened. */
  readonly #open = new Map<ServerHttp2Stream, number>();
  #sweep: NodeJS.Timeout | undefined;

  constructor(private readonly readLimitMs: number) {}

  /** Watches `stream`'s request, one with a body; returns what to call as the stream closes. */
  add(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): (() => void) | undefined {
    if (headers[":path"]?.startsWith(LONG_REQUESTS)) return undefined;
    this.#open.set(stream, performance.now());
    this.#sweep ??= setInterval(() => this.sweep(), SWEEP_MS).unref();
    return () => {
      this.#open.delete(stream);
      if (this.#open.size === 0) this.stop();
    };
  }

  /** Resets every request past the limit (every SWEEP_MS). */
  sweep(now = performance.now()): void {
    for (const [stream, opened] of this.#open) {
      if (stream.readableEnded || stream.destroyed) this.#open.delete(stream);
      else if (now - opened >= this.readLimitMs) {
        this.#open.delete(stream);
        stream.close(constants.NGHTTP2_CANCEL);
      }
    }
  }

  stop(): void {
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }
}
