import { constants, type Http2Session, type ServerHttp2Stream } from "node:http2";
import type { Readable } from "node:stream";

/** When a request body counts as sent in too many small pieces. */
export interface PieceLimits {
  /** Pieces a body may come in whatever their size. */
  free: number;
  /** Past `free`, the average piece must carry at least this many bytes. */
  minAverageBytes: number;
}

/**
 * A body of up to 32 KiB may come in any framing; beyond 32 pieces, the
 * average must be 1 KiB. Each HTTP/2 DATA frame or HTTP/1.1 chunk is a
 * piece and costs about the same CPU whatever it carries: a 60 KiB message
 * in 1-byte frames cost 45 times one in 16 KiB frames, before admission
 * could count it against its caller. Clients send 16 KiB frames (HTTP/2's
 * default) or whole bodies; the service's bodies are at most 64 KiB.
 */
const PIECE_LIMITS: PieceLimits = { free: 32, minAverageBytes: 1024 };

/**
 * Calls `onFlood` once, and stops passing the body on, when `body` (an
 * HTTP/2 stream or an HTTP/1.1 request, before any of its body is read)
 * comes in more pieces than `limits` allow for its bytes. Counted where
 * Node hands each piece over (`push`), so the body's readers see nothing of it.
 */
export function watchBodyPieces(
  body: Readable,
  onFlood: () => void,
  limits: PieceLimits = PIECE_LIMITS,
): void {
  let pieces = 0;
  let bytes = 0;
  let flooded = false;
  const push = body.push;
  body.push = function (this: Readable, chunk: unknown, encoding?: BufferEncoding): boolean {
    if (chunk !== null && chunk !== undefined) {
      if (flooded) return false;
      pieces++;
      bytes += (chunk as { length: number }).length;
      if (pieces > limits.free && bytes < pieces * limits.minAverageBytes) {
        flooded = true;
        onFlood();
        return false;
      }
    }
    return push.call(this, chunk, encoding);
  };
}

/**
 * Watches the request bodies of one HTTP/2 session (call the result with
 * each stream that has a body): a stream whose body comes in too many small
 * DATA frames ends the session at once (GOAWAY ENHANCE_YOUR_CALM, then
 * closed, as nghttp2 and Envoy end a connection that floods them): every
 * frame its client sends, on that stream or another, costs a parse, so the
 * connection goes, not only the stream.
 */
export function guardBodyPieces(
  session: Http2Session,
  limits: PieceLimits = PIECE_LIMITS,
): (stream: ServerHttp2Stream) => void {
  const flood = () => {
    if (session.closed || session.destroyed) return;
    session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    // Not a turn later: the rest of the read would be parsed first.
    session.destroy();
  };
  return (stream) => watchBodyPieces(stream, flood, limits);
}
