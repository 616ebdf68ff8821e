import type { ServerResponse } from "node:http";
import type { Http2ServerResponse, ServerHttp2Stream } from "node:http2";
import { constants as h2 } from "node:http2";
import type { ConnectError } from "@connectrpc/connect";
import { parseTimeout as parseConnectTimeout } from "@connectrpc/connect/protocol-connect";
import { parseTimeout as parseGrpcTimeout } from "@connectrpc/connect/protocol-grpc";
import { attachLimits } from "../app/call-limits.js";
import { errors } from "../app/errors.js";
import type { Admission } from "../ops/admission.js";
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
  /**
   * Runs `work` in an admission slot for `key`'s calls of `kind`, and holds
   * the slot until it stops (Admission.run); a slot waits while the call's
   * connection cannot take an answer (edge/unsent-bytes.ts). A caller that
   * has left by then (its FIN, its reset, its connection closed, seen once
   * the bytes read with its request are all handled) gets no slot: its call
   * ends `canceled`, and no work begins.
   */
  admit<T>(slot: { kind: string; key: string }, work: () => Promise<T>): Promise<T>;
}

/** A call as the door holds it. */
export interface StartedCall extends Call {
  /** The reads behind its whole request have been handled: admission need not wait for them. */
  readsSeen(): void;
}

/** What a call answers on: an HTTP/1.1 or compat HTTP/2 response, or an HTTP/2 stream. */
export type Answering = ServerResponse | Http2ServerResponse | ServerHttp2Stream;

/** Why a call's signal aborts once it has been answered: one instance, its stack never read. */
const ANSWERED = errors.answered();

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
  res: Answering,
  timeoutMs: number,
  admission: Admission,
  onDeadline: () => void,
): StartedCall {
  const controller = new AbortController();
  const deadline = performance.now() + timeoutMs;
  const timer = setTimeout(
    () => {
      controller.abort(errors.deadlineExceeded());
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
  // Whether what was read with the whole request has been handled already.
  let readsSeen = false;
  return {
    signal: controller.signal,
    remainingMs,
    end() {
      clearTimeout(timer);
      if (!controller.signal.aborted) controller.abort(ANSWERED);
    },
    readsSeen() {
      readsSeen = true;
    },
    async admit(slot, work) {
      if (!readsSeen) await afterPendingReads();
      if (!controller.signal.aborted && callerGone(res)) controller.abort(clientLeft(res));
      const signal = controller.signal;
      return admission.run({ ...slot, signal, room: () => roomForAnswer(res) }, work);
    },
  };
}

/**
 * Resolves once the event loop has polled its connections again: what came
 * with or right behind a request (the client's FIN, a reset) has been read
 * by then. A request is handled in the turn that read it, so one check
 * phase is not enough; two are (the second follows the next poll).
 */
export function afterPendingReads(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * Whether the caller has gone before its answer: its HTTP/2 stream reset or
 * its session gone, or its HTTP/1.1 connection closed or half-closed (the
 * client's FIN: it will read no answer, as nginx and Go's net/http take it).
 */
export function callerGone(res: Answering): boolean {
  const stream = "stream" in res ? res.stream : "session" in res ? res : undefined;
  if (stream !== undefined) return stream.destroyed || stream.closed;
  const socket = (res as ServerResponse).socket;
  return res.destroyed || socket === null || socket.destroyed || socket.readableEnded;
}

/**
 * Why a call whose response closed unfinished ended: the client left,
 * `canceled` whatever code its HTTP/2 reset carried. Node's
 * `stream.destroy(err)` and connect-node's own deadline reset with
 * INTERNAL_ERROR, which connect-node reads as `internal`: a fault of the
 * client's side, never the service's, so never logged as one.
 */
function clientLeft(res: Answering): ConnectError {
  const code = "stream" in res ? res.stream.rstCode : "session" in res ? res.rstCode : undefined;
  // No stack: it would say nothing about the client, and capturing one was a
  // tenth of the CPU a client spends on us by opening streams and leaving.
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    if (code === undefined || code === h2.NGHTTP2_NO_ERROR) return errors.canceled();
    return errors.clientReset(H2_CODE_NAMES[code] ?? `0x${code.toString(16)}`);
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
