import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { Admission, admissionLimits, type Release } from "./admission.js";

/** An Admission on a clock the test moves; its real timers are far off. */
function admissionAt(limits = { maxInFlight: 1, maxQueued: 3, maxWaitMs: 100, overloadWaitMs: 5 }) {
  const clock = { now: 0 };
  return { admission: new Admission(limits, () => clock.now), clock };
}

/** What a pending acquire became: "admitted", the error code's name, or "waiting". */
function track(p: Promise<Release>) {
  const state: { is: string; release?: Release } = { is: "waiting" };
  p.then(
    (release) => {
      state.is = "admitted";
      state.release = release;
    },
    (err) => {
      state.is = Code[ConnectError.from(err).code] ?? "error";
    },
  );
  return state;
}

const settle = () => new Promise((r) => setImmediate(r));

describe("Admission", () => {
  it("runs maxInFlight at once, queues maxQueued, sheds the rest at once", async () => {
    const { admission } = admissionAt();
    const first = track(admission.acquire());
    const queued = [1, 2, 3].map(() => track(admission.acquire()));
    const over = track(admission.acquire());
    await settle();
    expect([first.is, ...queued.map((q) => q.is), over.is]).toEqual([
      "admitted",
      "waiting",
      "waiting",
      "waiting",
      "Unavailable",
    ]);
    expect(admission.shed).toBe(1);
    first.release?.();
    await settle();
    expect(queued.map((q) => q.is)).toEqual(["admitted", "waiting", "waiting"]);
    expect(admission.inFlight).toBe(1);
  });

  it("lets a burst wait up to maxWaitMs while the queue drains now and then", async () => {
    const { admission, clock } = admissionAt();
    const first = track(admission.acquire());
    const second = track(admission.acquire());
    clock.now = 60; // longer than overloadWaitMs, within maxWaitMs
    await settle();
    first.release?.();
    await settle();
    expect(second.is).toBe("admitted");
  });

  it("sheds waiters older than overloadWaitMs once the queue has stood for maxWaitMs", async () => {
    const { admission, clock } = admissionAt();
    const running = track(admission.acquire());
    const old = track(admission.acquire()); // queued at 0, under the burst limit
    clock.now = 150; // the queue has not been empty since 0: overload
    const fresh = track(admission.acquire());
    clock.now = 152;
    await settle();
    running.release?.();
    await settle();
    // The old waiter would run 152 ms late: shed; the slot goes to the fresh one.
    expect([old.is, fresh.is]).toEqual(["Unavailable", "admitted"]);
    expect(admission.shed).toBe(1);
    expect(admission.queued).toBe(0);
  });

  it("counts a queue that empties between bursts as overload while it still sheds", async () => {
    // Load that comes in bursts (a load generator's 10 ms ticks, a batch of
    // clients) empties the queue between them; the refusals tell it apart
    // from a lone burst.
    const { admission, clock } = admissionAt({
      maxInFlight: 1,
      maxQueued: 1,
      maxWaitMs: 100,
      overloadWaitMs: 5,
    });
    const first = track(admission.acquire());
    const second = track(admission.acquire());
    const third = track(admission.acquire()); // the queue is full: shed at 0
    await settle();
    first.release?.();
    await settle();
    expect([second.is, third.is, admission.queued]).toEqual(["admitted", "Unavailable", 0]);
    clock.now = 10; // the next burst
    const next = track(admission.acquire());
    clock.now = 20;
    second.release?.();
    await settle();
    // It waited 10 ms, past overloadWaitMs: a burst's 100 ms would have let it run that late.
    expect(next.is).toBe("Unavailable");
  });

  it("sheds a waiter after overloadWaitMs (real time) under a standing queue", async () => {
    const { admission, clock } = admissionAt({
      maxInFlight: 1,
      maxQueued: 3,
      maxWaitMs: 100,
      overloadWaitMs: 20,
    });
    track(admission.acquire());
    track(admission.acquire());
    clock.now = 150;
    const late = track(admission.acquire());
    await new Promise((r) => setTimeout(r, 60));
    expect(late.is).toBe("Unavailable");
  });

  it("frees the place of a waiter whose caller leaves", async () => {
    const { admission } = admissionAt();
    const running = track(admission.acquire());
    const leaving = new AbortController();
    const waiter = track(admission.acquire(leaving.signal));
    leaving.abort();
    await settle();
    expect([waiter.is, admission.queued]).toEqual(["Canceled", 0]);
    running.release?.();
    expect(admission.inFlight).toBe(0);
  });

  it("sizes the queue to twice the slots, a burst to 100 ms, overload to 5 ms, not adaptive", () => {
    expect(admissionLimits(10)).toEqual({
      maxInFlight: 10,
      maxQueued: 20,
      maxWaitMs: 100,
      overloadWaitMs: 5,
      adaptive: false,
    });
  });

  it("adaptive: runs fewer at once (not under 3) while calls take over twice their usual time", async () => {
    const clock = { now: 0 };
    const admission = new Admission(
      { ...admissionLimits(10, true), maxQueued: 100, maxWaitMs: 10_000 },
      () => clock.now,
      () => 1, // the event loop always busy
    );
    /** `n` calls of `kind` taking `ms` each, one after the other, from `clock.now`. */
    const calls = async (n: number, kind: string, ms: number) => {
      for (let i = 0; i < n; i++) {
        const release = await admission.acquire(undefined, kind);
        clock.now += ms;
        release();
      }
    };
    /** One 100 ms window of calls; the next acquire re-evaluates the limit. */
    const window = async (...batches: [number, string, number][]) => {
      const start = clock.now;
      for (const [n, kind, ms] of batches) await calls(n, kind, ms);
      clock.now = start + 100;
    };
    // Lists take 1 ms and starts 10 ms, always: their usual times, no slowdown.
    await window([5, "list", 1], [5, "start", 10]);
    await window([5, "list", 1], [5, "start", 10]);
    await window([1, "list", 1]);
    expect(admission.limit).toBe(10);
    // Failures that are quick for reasons of their own (a bad token) count for nothing.
    for (let i = 0; i < 5; i++) (await admission.acquire(undefined, "list"))(false);
    expect(admission.limit).toBe(10);
    // Lists now take 3 ms: 10 -> 9 -> 8 -> ... and never under 3.
    const limits: number[] = [];
    for (let i = 0; i < 10; i++) {
      await window([5, "list", 3]);
      await calls(1, "list", 3);
      limits.push(admission.limit);
    }
    expect(limits).toEqual([9, 8, 7, 6, 5, 4, 3, 3, 3, 3]);
    // Fast again, with the limit in the way (3 running, one waits): one more per window.
    const held = await Promise.all(Array.from({ length: 3 }, () => admission.acquire()));
    const waiting = track(admission.acquire());
    for (const release of held) release();
    await settle();
    expect(waiting.is).toBe("admitted");
    waiting.release?.();
    await window([5, "list", 1]);
    await calls(1, "list", 1);
    expect(admission.limit).toBe(4);
  });
  it("adaptive: runs no fewer while the event loop has time to spare, however slow the calls", async () => {
    const clock = { now: 0 };
    const busy = { utilization: 0.5 };
    const admission = new Admission(
      { ...admissionLimits(10, true), maxQueued: 100, maxWaitMs: 10_000 },
      () => clock.now,
      () => busy.utilization,
    );
    const window = async (ms: number) => {
      const start = clock.now;
      for (let i = 0; i < 5; i++) {
        const release = await admission.acquire(undefined, "list");
        clock.now += ms;
        release();
      }
      clock.now = start + 100;
      (await admission.acquire(undefined, "list"))(false); // re-evaluates the limit
    };
    await window(1);
    await window(1);
    // Calls three times slower, but the loop idles half the time: what slows
    // them is not the CPU (the database, say), and fewer would not be faster.
    for (let i = 0; i < 3; i++) await window(3);
    expect(admission.limit).toBe(10);
    // The loop is saturated: now fewer run.
    busy.utilization = 0.97;
    await window(3);
    expect(admission.limit).toBe(9);
  });
});
