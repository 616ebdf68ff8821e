import { getHeapSpaceStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { expect, it } from "vitest";
import { insertQuiz, insertSessions, sessionIdFor } from "../support/fixtures.js";
import { useCaseWorld } from "../support/use-cases.js";

// What a call allocates for its signal dies young. V8's young-generation
// collections hold a WeakMap's values strongly: a map from a call's
// statements or signal to what leads back to the call carried each call's
// objects through them, and V8 then allocated such objects (a call's
// Kysely) in the old generation from the start, left for full collections.
const w = useCaseWorld();

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as (options: { type: "minor" | "major" }) => void;
const oldSpaceUsed = () =>
  getHeapSpaceStatistics().find((s) => s.space_name === "old_space")?.space_used_size ?? 0;

/** Bytes left in the old generation per call of `call`, after two young collections. */
async function promotedPerCall(call: () => Promise<unknown>): Promise<number> {
  gc({ type: "major" });
  const before = oldSpaceUsed();
  for (let i = 0; i < 300; i++) await call();
  gc({ type: "minor" });
  gc({ type: "minor" });
  return (oldSpaceUsed() - before) / 300;
}

/**
 * The fewest bytes per call each of `calls` leaves in the old generation, over
 * rounds taken in turn: a round in which something else's objects happened to
 * be promoted (the pool's, the driver's) says nothing of the call, while a call
 * whose objects V8 pretenures leaves them in every round.
 */
async function leastPromoted(...calls: (() => Promise<unknown>)[]): Promise<number[]> {
  const least = calls.map(() => Infinity);
  for (let round = 0; round < 5; round++)
    for (const [i, call] of calls.entries())
      least[i] = Math.min(least[i] ?? Infinity, await promotedPerCall(call));
  return least;
}

it("a call with a signal leaves no more for the old generation than one without", async () => {
  const quiz = await insertQuiz(w.db);
  await insertSessions(
    w.db,
    Array.from({ length: 20 }, (_, i) => ({
      id: sessionIdFor(i),
      userId: "lifetime",
      quizId: quiz.quizId,
      startedAt: new Date(Date.UTC(2026, 0, 1, 0, i)),
      completedAt: new Date(Date.UTC(2026, 0, 1, 0, i, 30)),
    })),
  );
  const list = (signal?: AbortSignal) =>
    w.sessions.listSessions("lifetime", { quizId: quiz.quizId }, signal);
  // Warm: the first calls compile code and fill caches, which stay.
  for (let i = 0; i < 300; i++) await list(new AbortController().signal);
  const [unsignalled = 0, signalled = 0] = await leastPromoted(
    () => list(),
    () => list(new AbortController().signal),
  );
  expect(signalled).toBeLessThan(unsignalled + 300);
});
