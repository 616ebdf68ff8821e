import {
  Code,
  ConnectError,
  type ContextValues,
  type HandlerContext,
  type MethodImplSpec,
} from "@connectrpc/connect";
import { errors } from "../app/errors.js";
import { abortMeansGoneKey } from "./deadline-interceptor.js";
import { callOutcomeKey } from "./outcome-interceptor.js";

/** A unary RPC as the short paths see it: the whole request in hand. */
export interface UnaryCall {
  url: string;
  header: Headers;
  /** The whole request body. */
  body: Uint8Array;
  /** Aborted when the client goes away before the answer. */
  signal: AbortSignal;
  contextValues: ContextValues;
}

/** What to send back: status, headers, one body, and trailers (gRPC). */
export interface UnaryAnswer {
  status: number;
  header: Headers;
  body: Uint8Array | undefined;
  trailer?: Headers;
}

/** A short path: the answer, or undefined to leave the call to Connect's own handler. */
export type UnaryPath = (call: UnaryCall) => Promise<UnaryAnswer | undefined>;

export type UnarySpec = Extract<MethodImplSpec, { kind: "unary" }>;

/**
 * The handler context Connect would give a unary call, without its three
 * AbortControllers (request, deadline, linked) aborted with an error object
 * at the end of every call: the call's own signal, or with a client deadline
 * one more controller and a timer. `cleanup` stops the timer.
 */
export function unaryContext(
  spec: UnarySpec,
  protocolName: string,
  call: UnaryCall,
  timeoutMs: number | undefined,
  responseHeader: Headers,
  responseTrailer: Headers,
): { context: HandlerContext; cleanup: () => void } {
  const { signal, cleanup } = deadlineSignal(call.signal, timeoutMs);
  // Without a client deadline the signal only tells that the client left.
  call.contextValues.set(abortMeansGoneKey, timeoutMs === undefined);
  const deadline = timeoutMs === undefined ? 0 : Date.now() + timeoutMs;
  const context: HandlerContext = {
    method: spec.method,
    service: spec.method.parent,
    requestMethod: "POST",
    protocolName,
    url: call.url,
    signal,
    timeoutMs: () => (deadline === 0 ? undefined : deadline - Date.now()),
    requestHeader: call.header,
    responseHeader,
    responseTrailer,
    values: call.contextValues,
  };
  return { context, cleanup };
}

function deadlineSignal(
  request: AbortSignal,
  timeoutMs: number | undefined,
): { signal: AbortSignal; cleanup: () => void } {
  if (timeoutMs === undefined) return { signal: request, cleanup: () => {} };
  const controller = new AbortController();
  const expire = () =>
    controller.abort(new ConnectError("the operation timed out", Code.DeadlineExceeded));
  const forward = () => controller.abort(request.reason);
  const timer = timeoutMs <= 0 ? undefined : setTimeout(expire, timeoutMs);
  if (timeoutMs <= 0) expire();
  if (request.aborted) forward();
  else request.addEventListener("abort", forward, { once: true });
  return {
    signal: controller.signal,
    cleanup() {
      clearTimeout(timer);
      request.removeEventListener("abort", forward);
    },
  };
}

/**
 * The error for a request message that does not parse: `invalid_argument`,
 * the caller's fault, with the parser's words. Connect's own handler says
 * `internal` (a 500) for binary it cannot parse (connect-go and gRPC's
 * Go server say invalid_argument and internal); a short path answers it
 * instead, before any interceptor, as Connect's handler would, and reports
 * the outcome itself.
 */
export function unparsedMessage(call: UnaryCall, error: ConnectError): ConnectError {
  call.contextValues.get(callOutcomeKey)?.settle("invalid_argument", "");
  return error.code === Code.InvalidArgument
    ? error
    : new ConnectError(error.rawMessage, Code.InvalidArgument);
}

/** `bytes` as a request or response body of one chunk. */
export function once(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      let sent = false;
      return {
        next: async () => {
          if (sent) return { done: true, value: undefined };
          sent = true;
          return { done: false, value: bytes };
        },
      };
    },
  };
}

/**
 * How much of a unary request body to read: an envelope (5 bytes) more than
 * `readMaxBytes`, and one byte to tell "over". Past it, Connect answers
 * `resource_exhausted` from what was read.
 */
export const bodyCapFor = (readMaxBytes: number) => readMaxBytes + 6;

/** What a failed call answers, as Connect's handler says it: a ConnectError as it is, anything else `internal`. */
export function callError(err: unknown): ConnectError {
  return err instanceof ConnectError ? err : errors.internal(err);
}
