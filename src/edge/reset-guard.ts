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
const RESET_RATIO: ResetRatio = { prematureMs: 1000, judgedAfter: 500 };

/** How long streams in flight get after a GOAWAY for abuse. */
const GOAWAY_GRACE_MS = 1000;

/**
 * Watches one HTTP/2 connection for rapid reset: a client whose premature
 * resets reach half its closed streams (counted once `judgedAfter` have
 * closed; before, half of `judgedAfter`) gets GOAWAY ENHANCE_YOUR_CALM and
 * its connection is closed. Returns what to call as each stream opens,
 * which returns what to call as it closes (one-port.ts calls both for every
 * stream, whatever serves it).
 */
export function guardResets(
  session: Http2Session,
  ratio: ResetRatio = RESET_RATIO,
): (stream: ServerHttp2Stream) => (() => void) | undefined {
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
  /** A stream closed, `premature` if its client reset it soon after opening it. */
  const end = (prematurely: boolean) => {
    closed++;
    if (prematurely) premature++;
    judge();
  };
  return (stream) => {
    // `aborted`: reset before the server ended its side. A stream reset in
    // the same read as its HEADERS is aborted already as it opens: counted at
    // once, so a flood is judged within its read.
    if (stream.aborted) {
      end(true);
      return undefined;
    }
    const opened = performance.now();
    return () => end(stream.aborted && performance.now() - opened < ratio.prematureMs);
  };
}
