import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";

/**
 * Whether the client of `raw` has already gone: its HTTP/2 stream was reset
 * or closed, or its HTTP/1.1 connection closed. Work for it would be thrown
 * away, so none should start. An abort signal alone cannot tell: Connect
 * links it to the request's "close" only when its handler starts, and a
 * stream reset while Fastify was still routing closed before that.
 */
export function clientGone(raw: IncomingMessage | Http2ServerRequest): boolean {
  if ("stream" in raw) return raw.stream.closed || raw.stream.destroyed;
  // No socket at all (an injected request, say) is not a client that left.
  return raw.socket?.destroyed === true;
}
