import type { ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import { constants as h2 } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { parseTimeout as parseConnectTimeout } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout } from "@connectrpc/connect/protocol-grpc";
import { attachLimits } from "../app/call-limits.js";
import { errors } from "../app/errors.js";
import { callLimits } from "./call-limits.js";
import { roomForAnswer } from "./unsent-bytes.js";

/**
 * One API call as the edge sees it: its one deadline and its one signal.
 * The signal aborts when the deadline passes (`deadline_exceeded`), when
 * the client leaves before its answer (`canceled`), or when the call has
 * been answered (work still running for it is thrown away). Every use case
 * takes it, so work stops whichever comes first.
 */
export interface Call {
  readonly signal: AbortSignal;
  /** Milliseconds left before the deadline (negative once passed). */
  remainingMs(): number;
  /** Ends the call (its timer, and its signal if still live): its answer is out. */
  end(): void;
  /** Undefined if its connection can take an answer now, else when it can (edge/unsent-bytes.ts). */
  room(): Promise<void> | undefined;
}

/** The deadline's error, for every transport: 504 / DEADLINE_EXCEEDED. */
export function deadlineExceeded(): ConnectError {
  return new ConnectError("the request took longer than its deadline", Code.DeadlineExceeded);
}

/** Why a call's signal aborts once it has been answered: nobody waits for its work any more. */
const ANSWERED = new ConnectError("the call has been answered", Code.Canceled);

/**
 * The call's deadline: `REQUEST_TIMEOUT_MS` or the client's own
 * (`grpc-timeout`, `connect-timeout-ms`), whichever is first. A header that
 * does not parse is left to the protocol handler, which refuses it.
 */
export function callTimeoutMs(
  headers: Record<string, string | string[] | undefined>,
  requestTimeoutMs: number,
): number {
  let ms = requestTimeoutMs;
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string") {
    const t = parseGrpcTimeout(grpc, requestTimeoutMs).timeoutMs;
    if (t !== undefined) ms = Math.min(ms, t);
  }
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string") {
    const t = parseConnectTimeout(connect, requestTimeoutMs).timeoutMs;
    if (t !== undefined) ms = Math.min(ms, t);
  }
  return ms;
}

/**
 * Starts the call of one request: its deadline timer, and its end when the
 * response closes (answered, or the client left). `onDeadline` runs when the
 * deadline passes, after the signal has aborted.
 */
export function startCall(
  res: ServerResponse | Http2ServerResponse,
  timeoutMs: number,
  onDeadline: () => void,
): Call {
  const controller = new AbortController();
  const deadline = performance.now() + timeoutMs;
  const timer = setTimeout(
    () => {
      controller.abort(deadlineExceeded());
      onDeadline();
    },
    Math.max(0, timeoutMs),
  );
  const remainingMs = () => deadline - performance.now();
  attachLimits(controller.signal, callLimits(remainingMs));
  // Closed unfinished: the client left (an HTTP/2 reset, a closed connection).
  res.once("close", () => {
    clearTimeout(timer);
    if (controller.signal.aborted) return;
    controller.abort(res.writableEnded ? ANSWERED : clientLeft(res));
  });
  return {
    signal: controller.signal,
    remainingMs,
    end() {
      clearTimeout(timer);
      if (!controller.signal.aborted) controller.abort(ANSWERED);
    },
    room: () => roomForAnswer(res),
  };
}

/**
 * A call made without the edge (in-process tests through
 * `createRouterTransport`): Connect's own signal and the server's deadline.
 */
export function detachedCall(signal: AbortSignal, timeoutMs: number): Call {
  const controller = new AbortController();
  const deadline = performance.now() + timeoutMs;
  const timer = setTimeout(() => controller.abort(deadlineExceeded()), timeoutMs);
  const remainingMs = () => deadline - performance.now();
  attachLimits(controller.signal, callLimits(remainingMs));
  const onAbort = () => controller.abort(signal.reason ?? errors.canceled());
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  controller.signal.addEventListener("abort", () => {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  });
  return {
    signal: controller.signal,
    remainingMs,
    end() {
      if (!controller.signal.aborted) controller.abort(ANSWERED);
    },
    // No connection of its own to wait for.
    room: () => undefined,
  };
}

/**
 * Why a call whose response closed unfinished ended: the client left,
 * `canceled` whatever code its HTTP/2 reset carried. Node's
 * `stream.destroy(err)` and connect-node's own deadline reset with
 * INTERNAL_ERROR, which connect-node reads as `internal`: a fault of the
 * client's side, never the service's, so never logged as one.
 */
function clientLeft(res: ServerResponse | Http2ServerResponse): ConnectError {
  const code = "stream" in res ? res.stream.rstCode : undefined;
  // No stack: it would say nothing about the client, and capturing one was a
  // tenth of the CPU a client spends on us by opening streams and leaving.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    if (code === undefined || code === h2.NGHTTP2_NO_ERROR) return errors.canceled();
    return new ConnectError(
      `the client reset the stream (${H2_CODE_NAMES[code] ?? `0x${code.toString(16)}`})`,
      Code.Canceled,
    );
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** HTTP/2's error codes (RFC 9113, section 7), by number. */
export const H2_CODE_NAMES = [
  "NO_ERROR",
  "PROTOCOL_ERROR",
  "INTERNAL_ERROR",
  "FLOW_CONTROL_ERROR",
  "SETTINGS_TIMEOUT",
  "STREAM_CLOSED",
  "FRAME_SIZE_ERROR",
  "REFUSED_STREAM",
  "CANCEL",
  "COMPRESSION_ERROR",
  "CONNECT_ERROR",
  "ENHANCE_YOUR_CALM",
  "INADEQUATE_SECURITY",
  "HTTP_1_1_REQUIRED",
];
