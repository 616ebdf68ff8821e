import type { ServerOptions } from "node:http2";
import { MAX_CONCURRENT_STREAMS, MAX_HEADER_BYTES, NGHTTP2_RESET_LIMIT } from "../limits.js";

/**
 * What the app's HTTP/2 server advertises and enforces in nghttp2 itself:
 * the header list size, the streams a connection may have open at once,
 * and nghttp2's own reset limit, raised to a backstop behind the reset
 * guard (edge/reset-guard.ts), which answers first with the code that says why.
 */
export function http2ServerOptions(): ServerOptions {
  return {
    ...NGHTTP2_RESET_LIMIT,
    settings: {
      maxHeaderListSize: MAX_HEADER_BYTES,
      // Node advertises no limit by default (2^32-1 streams on one connection).
      maxConcurrentStreams: MAX_CONCURRENT_STREAMS,
    },
  };
}
