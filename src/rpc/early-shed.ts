import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { type Admission, overloaded } from "../ops/admission.js";
import type { UnaryAnswer } from "./unary-call.js";

/** What the adapters need to refuse a call of a guarded procedure before decoding it. */
export interface ShedGuard {
  admission: Admission;
  /** Where failures go (ops/failure-log.ts), as the outcome interceptor sends them. */
  onFailure?: (err: unknown, status: number) => void;
}

const error = overloaded();

/** gRPC's answer, trailers-only (status in the headers), as Connect writes it. */
const grpcShed: UnaryAnswer = {
  status: 200,
  header: setTrailerStatus(new Headers({ "content-type": "application/grpc+proto" }), error),
  body: undefined,
};

/** Connect's unary answer: 503 and the error as JSON, as Connect writes it. */
const connectBody = errorToJsonBytes(error, undefined);
const connectShed: UnaryAnswer = {
  status: codeToHttpStatus(error.code),
  header: new Headers({
    "content-type": "application/json",
    "content-length": String(connectBody.byteLength),
  }),
  body: connectBody,
};

/**
 * Refuses a unary gRPC or Connect call at once when admission control would
 * refuse it anyway (every slot busy, the queue full): the answer, the same
 * bytes as the admission interceptor's `unavailable`, built once. Under
 * overload most calls are refused, and when Node's CPU is the bottleneck a
 * refusal that first decodes the request, builds a handler context and runs
 * the interceptors costs a good part of a served call, taking CPU from the
 * admitted ones. Undefined: no guard, room to run or queue, or another
 * protocol (gRPC-Web, streams): the call goes on as usual.
 */
export function shedEarly(
  guard: ShedGuard | undefined,
  contentType: string | undefined,
): UnaryAnswer | undefined {
  if (guard === undefined) return undefined;
  let answer: UnaryAnswer;
  if (contentType === "application/grpc" || contentType === "application/grpc+proto") {
    answer = grpcShed;
  } else if (contentType === "application/json" || contentType === "application/proto") {
    answer = connectShed;
  } else {
    return undefined;
  }
  if (!guard.admission.shedIfFull()) return undefined;
  guard.onFailure?.(error, 503);
  return answer;
}
