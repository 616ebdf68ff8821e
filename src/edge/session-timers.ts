import type { Http2Session } from "node:http2";
import { HTTP2_SESSION_IDLE_MS, REQUEST_HEAD_TIMEOUT_MS } from "../limits.js";

/**
 * An HTTP/2 session earns its connection slot as an HTTP/1.1 connection
 * does, by asking: one that has opened no stream within
 * REQUEST_HEAD_TIMEOUT_MS of its preface is destroyed, as an HTTP/1.1
 * connection that sends no head is closed. One idle (no frame either way)
 * for HTTP2_SESSION_IDLE_MS is closed with GOAWAY; answers it still owes
 * and cannot send are the unsent-bytes guard's (edge/unsent-bytes.ts).
 */
export function sessionTimers(
  session: Http2Session,
  headTimeoutMs = REQUEST_HEAD_TIMEOUT_MS,
  idleMs = HTTP2_SESSION_IDLE_MS,
): void {
  const firstStream = setTimeout(() => {
    if (!session.destroyed) session.destroy();
  }, headTimeoutMs);
  firstStream.unref();
  session.once("stream", () => clearTimeout(firstStream));
  session.once("close", () => clearTimeout(firstStream));
  session.setTimeout(idleMs, () => session.close());
}
