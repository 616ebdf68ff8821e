import { constants, type Http2Session, type ServerHttp2Stream } from "node:http2";

/** When a session's client resets count as premature, and how many it may have. */
export interface ResetRatio {
  /** A stream the client resets within this long of opening it is a premature reset. */
  prematureMs: number;
  /**
   * Streams after which the share of premature resets is judged: half of
   * them reset prematurely ends the session; before that many have closed,
   * half of this many premature resets already does.
   */
  judgedAfter: number;
}

/**
 * Envoy's defaults (premature_reset_min_stream_lifetime_seconds 1,
 * premature_reset_total_stream_count 500): a shared connection's ordinary
 * cancellations are a small share of its streams, whatever their rate; a
 * rapid-reset flood (CVE-2023-44487) is nearly all premature resets, and
 * its 250th ends it.
 */
export const RESET_RATIO: ResetRatio = { prematureMs: 1000, judgedAfter: 500 };

/** How long streams in flight get after a GOAWAY for abuse. */
const GOAWAY_GRACE_MS = 1000;

/**
 * Watches one HTTP/2 connection for rapid reset: a client whose premature
 * resets reach half its closed streams (counted once `judgedAfter` have
 * closed; before, half of `judgedAfter`) gets GOAWAY ENHANCE_YOUR_CALM and
 * its connection is closed. Session-level, so it holds whatever serves the
 * streams (Node's compatibility layer or a `stream` handler).
 */
export function guardResets(session: Http2Session, ratio: ResetRatio = RESET_RATIO): void {
  let closed = 0;
  let premature = 0;
  let closing = false;
  const judge = () => {
    // nghttp2 may have ended the session itself: goaway() would throw.
    if (closing || session.destroyed || session.closed) return;
    const over =
      closed < ratio.judgedAfter ? premature * 2 >= ratio.judgedAfter : premature * 2 >= closed;
    if (!over) return;
    closing = true;
    // GOAWAY says why and refuses new streams; close() ends the connection
    // once the streams already open are done, destroy() if they dawdle.
    session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    session.close();
    setTimeout(() => session.destroy(), GOAWAY_GRACE_MS).unref();
  };
  session.on("stream", (stream: ServerHttp2Stream) => {
    const opened = performance.now();
    let counted = false;
    const end = (reset: boolean) => {
      if (counted) return;
      counted = true;
      closed++;
      if (reset && performance.now() - opened < ratio.prematureMs) premature++;
      judge();
    };
    // 'aborted': the peer reset the stream before the server ended its side.
    // A stream reset in the same read as its HEADERS is aborted already when
    // 'stream' is emitted: counted at once, so a flood is judged within its read.
    if (stream.aborted) end(true);
    else stream.once("aborted", () => end(true));
    stream.once("close", () => end(false));
  });
}
