/**
 * W3C Trace Context's limits on `tracestate`: at most 32 list-members, and
 * a system may cut it to 512 characters, dropping members of over 128
 * characters first, then from the end (the least recent).
 */
const MAX_MEMBERS = 32;
const MAX_CHARS = 512;
const LONG_MEMBER = 128;

/**
 * The trace fields an event carries from the call that wrote it to NATS:
 * `traceparent` and `tracestate` (within W3C's limits), nothing else. The
 * propagators also write `baggage`, which is the caller's to say and
 * whatever size it sent: it is not the event's (events.md names only these two).
 */
export function traceFields(carrier: Record<string, string>): Record<string, string> | undefined {
  const { traceparent, tracestate } = carrier;
  if (traceparent === undefined) return undefined;
  const state = tracestate === undefined ? undefined : boundedTracestate(tracestate);
  return state ? { traceparent, tracestate: state } : { traceparent };
}

/** `tracestate` within W3C's limits; undefined if nothing is left. */
function boundedTracestate(value: string): string | undefined {
  let members = value
    .split(",")
    .map((m) => m.trim())
    .filter((m) => m !== "")
    .slice(0, MAX_MEMBERS);
  const length = () => members.join(",").length;
  if (length() > MAX_CHARS) members = members.filter((m) => m.length <= LONG_MEMBER);
  while (members.length > 0 && length() > MAX_CHARS) members.pop();
  return members.length > 0 ? members.join(",") : undefined;
}
