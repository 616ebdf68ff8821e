import type { ContextValues } from "@connectrpc/connect";
import { codeToHttpStatus, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { type Admission, overloaded, type Release } from "../ops/admission.js";
import { heldSlotKey } from "./admission-interceptor.js";
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
 * (`admitted`): a waiter shed from the queue costs no more than one
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
 * The call's slot, at once or after a wait: its Release, "refused" when it
 * was shed while waiting (already reported), or "gone" when `signal` aborted
 * first (the client left). Never rejects.
 */
function waitForSlot(
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

/**
 * Runs `call` in its slot: asks for it at once (call this as the request
 * arrives, before reading it, so that calls keep their order), then either
 * runs `call` with the slot handed to the admission interceptor
 * (`heldSlotKey`) and frees it when the call is over, whether or not the
 * call reached the interceptor (which frees it first when it did); or
 * answers `refuse(early.refusal)` if the call was shed while waiting; or does
 * nothing if the client left. No early admission: just `call`.
 */
export async function admitted(
  early: EarlyAdmission | undefined,
  signal: AbortSignal,
  kind: string,
  contextValues: ContextValues,
  refuse: (refusal: UnaryAnswer) => void,
  call: () => Promise<void>,
): Promise<void> {
  if (early === undefined) return call();
  const held = await waitForSlot(early, signal, kind);
  if (held === "gone") return;
  if (held === "refused") return refuse(early.refusal);
  contextValues.set(heldSlotKey, held);
  try {
    await call();
  } finally {
    held(false);
  }
}
