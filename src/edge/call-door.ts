import { type IncomingHttpHeaders, ServerResponse } from "node:http";
import { ConnectError } from "@connectrpc/connect";
import { errors } from "../app/errors.js";
import type { Authenticator } from "../auth/authenticator.js";
import type { Admission } from "../ops/admission.js";
import type { RefusalPace } from "../ops/refusal-pace.js";
import {
  type Answering,
  afterPendingReads,
  type Call,
  callerGone,
  callTimeoutMs,
  startCall,
} from "./call.js";

/** What the door needs of every API call, from its settings (server.ts). */
export interface DoorOptions {
  authenticator: Authenticator;
  admission: Admission;
  /** REQUEST_TIMEOUT_MS: the longest a call may take, unless the client says less. */
  requestTimeoutMs: number;
  /** How refusals are paced, per caller. */
  pace: RefusalPace;
}

/** One call as it arrives, whatever carries it: a Fastify route, or an HTTP/2 stream of its own. */
export interface Arrival {
  answering: Answering;
  headers: IncomingHttpHeaders;
  /** An RPC: its protocol's own deadline header counts. */
  rpc: boolean;
  /** The client's address: who calls, for a caller without a valid token. */
  ip(): string;
  /** Whether the whole request has arrived. */
  complete(): boolean;
  /** Answers the call now, in its protocol's words. */
  answerEarly(err: ConnectError): void;
  /** Answers a REST call past the door at its deadline (RPC handlers answer theirs). */
  answerDeadline(): void;
}

/** How a call left the door. */
export interface Entered {
  call: Call;
  /** The token's user; undefined without a valid token. */
  userId: string | undefined;
  /** Who calls, for fair admission: the token's user, or the client's address. */
  callerKey: string;
  /** Through: its request may be read and its work begin (Call.admit). */
  through: boolean;
  /** Its caller had left already: nothing was answered. */
  left: boolean;
}

/**
 * What every API call gets, REST and RPC alike, whatever carries it: its
 * one deadline (`grpc-timeout`, `connect-timeout-ms` or REQUEST_TIMEOUT_MS,
 * whichever is first) and its signal, answered if it passes while the
 * request is still arriving; then, before the body is read, the caller (the
 * token's user, or the client's address without a valid token) and the
 * door: a call without a valid token, or one that admission would refuse
 * (the caller over its share, or the queue full), is answered at once, or
 * held first if that caller keeps being refused. `started` gets the call as
 * soon as it exists.
 */
export async function enterCall(
  arrival: Arrival,
  options: DoorOptions,
  started: (call: Call) => void,
): Promise<Entered> {
  const { authenticator, admission, requestTimeoutMs, pace } = options;
  // Until then, a call refused at the door is answered with its refusal.
  let pastDoor = false;
  const call = startCall(
    arrival.answering,
    arrival.rpc ? callTimeoutMs(arrival.headers, requestTimeoutMs) : requestTimeoutMs,
    admission,
    () => {
      // REST: answered here, whatever its handler still awaits, as Fastify's
      // own handlerTimeout answers; what the handler ends with later is not
      // sent (rest/routes.ts). RPC: Connect's handlers race the same signal
      // and answer themselves, so only a request still arriving is answered here.
      if (pastDoor && !arrival.rpc) arrival.answerDeadline();
      else if (!arrival.complete()) arrival.answerEarly(errors.deadlineExceeded());
    },
  );
  started(call);
  // An HTTP/1.1 caller whose FIN came with its request (a connection that
  // waited in the listen queue past its client) is seen as gone once this
  // poll's reads are done: nothing is verified, read or run for it. HTTP/2
  // calls pay no such turn here; a reset behind theirs is looked for before
  // admission (Call.admit), as every call's is.
  if (arrival.answering instanceof ServerResponse) {
    const whole = arrival.complete();
    await afterPendingReads();
    if (whole) call.readsSeen();
  }
  if (callerGone(arrival.answering)) {
    return { call, userId: undefined, callerKey: "", through: false, left: true };
  }
  let refusal: unknown;
  let userId: string | undefined;
  let callerKey: string;
  try {
    userId = await authenticator.authenticate(arrival.headers.authorization);
    callerKey = `user:${userId}`;
  } catch (err) {
    refusal = err;
    callerKey = `address:${arrival.ip()}`;
  }
  const entered = { call, userId, callerKey, through: false, left: false };
  // Gone while its token was verified: nothing more is read or done for it;
  // its call is counted as its answer closes.
  if (callerGone(arrival.answering)) return { ...entered, left: true };
  refusal ??= admission.refusalBeforeRead(callerKey);
  if (refusal === undefined) {
    pastDoor = true;
    return { ...entered, through: true };
  }
  await paced(pace.holdMs(callerKey), call);
  arrival.answerEarly(ConnectError.from(refusal));
  return entered;
}

/** Waits `holdMs`, no longer than the call has left, nor once it has stopped. */
function paced(holdMs: number, call: Call): Promise<void> {
  if (holdMs <= 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, Math.min(holdMs, call.remainingMs()));
    function done() {
      clearTimeout(timer);
      call.signal.removeEventListener("abort", done);
      resolve();
    }
    call.signal.addEventListener("abort", done, { once: true });
  });
}
