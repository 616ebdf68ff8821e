import { constants, type ServerHttp2Stream } from "node:http2";

/**
 * An answer sent while the client still sends its request: once the
 * trailers are out, RST_STREAM NO_ERROR (RFC 9113 §8.1) frees the stream's
 * slot instead of leaving it open for a body nobody reads. On the next
 * turn, so the trailers go out first.
 */
export function resetAfterTrailers(stream: ServerHttp2Stream): void {
  stream.once("wantTrailers", () =>
    setImmediate(() => {
      if (!stream.closed && !stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
    }),
  );
}
