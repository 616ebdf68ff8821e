import { SessionMode, SessionStatus } from "../../gen/practice/v1/practice_session_service_pb.js";
import { errors } from "../app/errors.js";
import type { SessionMode as Mode, SessionStatus as Status } from "../domain/session.js";

/**
 * A request message's values as the use cases take them, for every transport alike (the RPCs
 * and the REST gateway both read requests into these messages).
 */

const STATUSES = new Map<SessionStatus, Status | undefined>([
  [SessionStatus.UNSPECIFIED, undefined],
  [SessionStatus.ACTIVE, "active"],
  [SessionStatus.COMPLETED, "completed"],
]);

const MODES = new Map<SessionMode, Mode>([
  [SessionMode.UNSPECIFIED, "full"],
  [SessionMode.FULL, "full"],
  [SessionMode.REVIEW, "review"],
  [SessionMode.MISSED, "missed"],
]);

/** ListSessions' filter: undefined for both. */
export function statusOf(status: SessionStatus): Status | undefined {
  return fromProto(STATUSES, status, "status");
}

/** StartSession's mode: UNSPECIFIED is the whole quiz. */
export function modeOf(mode: SessionMode): Mode {
  return fromProto(MODES, mode, "mode");
}

/** A page size: proto3 cannot tell 0 from unset, and 0 asks for the default (undefined). */
export function pageSizeOf(limit: number): number | undefined {
  return limit === 0 ? undefined : limit;
}

/** A proto enum's value as `table` reads it; `what` names it in the error for one not in it. */
function fromProto<E extends number, T>(table: Map<E, T>, value: E, what: string): T {
  // The validation step refuses values the enum does not define; this holds without it too.
  if (!table.has(value)) throw errors.invalidArgument(`unknown ${what} ${value}`);
  return table.get(value) as T;
}
