/**
 * Keeps one of `process.nextTick`'s queue entries alive for the life of the
 * process. V8 holds the entries' shapes weakly; when they were lost (in about
 * half of the processes, seconds after start) nextTick's feedback went
 * megamorphic for good and every nextTick, some 40 per call, went through
 * V8's runtime: 6% of a REST call's instructions (docs/decisions.md).
 * Imported first by the entry points; the hook is off again at once.
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
