import { constants, type ServerHttp2Stream } from "node:http2";

/**
 * An answer complete while the client still sends its request: RST_STREAM
 * NO_ERROR (RFC 9113 §8.1) frees the stream's slot instead of leaving it
 * open for a body nobody reads. On the next turn, so the answer goes out
 * first (a close with NO_ERROR also waits for what is still being written).
 */
export function endUnfinishedRequest(stream: ServerHttp2Stream): void {
  setImmediate(() => {
    if (!stream.closed && !stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
  });
}

/** The same once a gRPC answer's trailers are out. */
export function resetAfterTrailers(stream: ServerHttp2Stream): void {
  stream.once("wantTrailers", () => endUnfinishedRequest(stream));
}
