/**
 * Keeps one entry of `process.nextTick`'s queue alive for the life of the
 * process, so that V8 keeps the entries' shape (hidden class).
 *
 * nextTick builds each entry with an object literal with computed keys
 * (Node 24, lib/internal/process/task_queues.js), and V8 remembers the
 * shape of each key's step only weakly. Seen here in about half of the
 * service's processes, within a second or two of start: that memory turns
 * megamorphic, for good, and from then on every nextTick defines its keys
 * through V8's runtime, some 40 times per API call: by
 * `npm run bench:instructions`, 789,000 instructions per REST ListSessions
 * in such a process against 745,000 in one without (6%), and two processes
 * of one build differed by up to 15% in CPU per call. With one entry kept, it was not seen in any
 * process since (docs/decisions.md).
 *
 * Imported first by the entry points. An async hook sees the entry as it is
 * made (its resource); the hook is off again before anything else runs.
 */
import { createHook } from "node:async_hooks";

let kept: object | undefined;

const hook = createHook({
  init(_asyncId, type, _triggerAsyncId, resource) {
    if (type === "TickObject") kept ??= resource;
  },
});
hook.enable();
process.nextTick(() => {});
hook.disable();

/** The entry kept (for its test). */
export function keptTickEntry(): object | undefined {
  return kept;
}
