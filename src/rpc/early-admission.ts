import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { type Admission, overloaded, type Release } from "../ops/admission.js";
import type { UnaryAnswer } from "./unary-call.js";

/** What the adapters need to admit or refuse a call of a guarded procedure before decoding it. */
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

/** A call that the transport admits itself, before decoding it. */
export interface EarlyAdmission {
  guard: ShedGuard;
  /** The refusal in the call's protocol: the same bytes as the admission interceptor's `unavailable`. */
  refusal: UnaryAnswer;
}

/**
 * Admission control at the transport, for unary gRPC and Connect calls of a
 * guarded procedure: under overload most calls are refused, and when Node's
 * CPU is the bottleneck a refusal that first decodes the request, builds a
 * handler context and runs the interceptors costs a good part of a served
 * call, taking CPU from the admitted ones. So the transport refuses the call
 * at once when every slot is busy and the queue is full (`refusedAtOnce`),
 * and otherwise takes its slot or queue place before decoding anything
 * (`waitForSlot`): a waiter shed from the queue costs no more than one
 * refused at once. Undefined: no guard, or another protocol (gRPC-Web,
 * streams); the admission interceptor admits the call as usual.
 */
export function earlyAdmission(
  guard: ShedGuard | undefined,
  contentType: string | undefined,
): EarlyAdmission | undefined {
  if (guard === undefined) return undefined;
  if (contentType === "application/grpc" || contentType === "application/grpc+proto") {
    return { guard, refusal: grpcShed };
  }
  if (contentType === "application/json" || contentType === "application/proto") {
    return { guard, refusal: connectShed };
  }
  return undefined;
}

/** True (and the refusal counted and reported) when the call would only be refused. */
export function refusedAtOnce(early: EarlyAdmission): boolean {
  if (!early.guard.admission.shedIfFull()) return false;
  early.guard.onFailure?.(error, 503);
  return true;
}

/**
 * The call's slot, at once or after a wait: its Release (hand it to the
 * admission interceptor, `heldSlotKey`), "refused" when it was shed while
 * waiting (answer `early.refusal`; already reported), or "gone" when
 * `signal` aborted first (the client left). Never rejects.
 */
export function waitForSlot(
  early: EarlyAdmission,
  signal: AbortSignal,
  kind: string,
): Promise<Release | "refused" | "gone"> {
  return early.guard.admission.acquire(signal, kind).then(
    (release) => release,
    (err: unknown) => {
      if (err !== error) return "gone";
      early.guard.onFailure?.(error, 503);
      return "refused";
    },
  );
}
