import { constants, type Http2Session, type ServerHttp2Stream } from "node:http2";

/** How many streams a client may reset before its connection is closed, and how fast that allowance refills. */
export interface ResetBudget {
  /** Resets allowed in a burst. */
  burst: number;
  /** Resets per second added back to the allowance. */
  perSecond: number;
}

/**
 * Default: a client whose calls all time out or get cancelled resets a few
 * streams a second; one that resets hundreds is attacking ("rapid reset",
 * CVE-2023-44487), making the server start work it then throws away.
 */
export const RESET_BUDGET: ResetBudget = { burst: 200, perSecond: 20 };

/** How long streams in flight get after a GOAWAY for abuse. */
const GOAWAY_GRACE_MS = 1000;

/**
 * Watches one HTTP/2 connection for abuse: a client that resets more
 * streams than `budget` allows gets GOAWAY ENHANCE_YOUR_CALM and its
 * connection is closed. Session-level, so it holds whatever serves the
 * streams (Node's compatibility layer or a `stream` handler).
 */
export function guardHttp2Session(session: Http2Session, budget: ResetBudget = RESET_BUDGET): void {
  let allowance = budget.burst;
  let last = performance.now();
  let closing = false;
  const onReset = () => {
    // nghttp2 may have ended the session itself: goaway() would throw.
    if (closing || session.destroyed || session.closed) return;
    const now = performance.now();
    allowance = Math.min(budget.burst, allowance + ((now - last) / 1000) * budget.perSecond);
    last = now;
    allowance -= 1;
    if (allowance >= 0) return;
    closing = true;
    // GOAWAY says why and refuses new streams; close() ends the connection
    // once the streams already open are done, destroy() if they dawdle.
    session.goaway(constants.NGHTTP2_ENHANCE_YOUR_CALM);
    session.close();
    setTimeout(() => session.destroy(), GOAWAY_GRACE_MS).unref();
  };
  session.on("stream", (stream: ServerHttp2Stream) => {
    // 'aborted': the peer reset the stream before the server ended its side.
    // A stream reset in the same read as its HEADERS is aborted already when
    // 'stream' is emitted: count it too.
    if (stream.aborted) onReset();
    else stream.once("aborted", onReset);
  });
}
