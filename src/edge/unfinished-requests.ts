import { constants, type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";

/** Paths whose requests last as long as the conversation (bidirectional streams). */
const LONG_REQUESTS = "/grpc.reflection.";

/**
 * An HTTP/2 request that has not ended (END_STREAM) within `readLimitMs`
 * is reset (CANCEL): a slow or stalled sender holds a stream of its
 * connection's 100 for as long as a call may take, not forever.
 * Reflection is a conversation whose request stays open on purpose.
 */
export function cutOffUnfinished(readLimitMs: number) {
  return (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, flags: number): void => {
    // END_STREAM on the HEADERS: a request without a body, ended already.
    if (flags & constants.NGHTTP2_FLAG_END_STREAM) return;
    if (headers[":path"]?.startsWith(LONG_REQUESTS)) return;
    const timer = setTimeout(() => {
      if (!stream.readableEnded && !stream.destroyed) stream.close(constants.NGHTTP2_CANCEL);
    }, readLimitMs);
    timer.unref();
    const clear = () => clearTimeout(timer);
    stream.once("end", clear);
    stream.once("close", clear);
  };
}
