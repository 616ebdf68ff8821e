import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DeadlineSweep } from "./deadline-sweep.js";

const never = () => new Promise<never>(() => {});
const outcome = (p: Promise<unknown>) => {
  const seen: { value?: unknown; error?: unknown } = {};
  p.then(
    (value) => {
      seen.value = value;
    },
    (error: unknown) => {
      seen.error = error;
    },
  );
  return seen;
};

describe("DeadlineSweep", () => {
  let sweep: DeadlineSweep;
  beforeEach(() => {
    vi.useFakeTimers();
    sweep = new DeadlineSweep(
      () => "expired",
      (signal) => `aborted: ${String(signal.reason)}`,
    );
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("lets a call that ends in time keep its result, and forgets it", async () => {
    const signal = new AbortController().signal;
    await expect(sweep.race(Promise.resolve(42), 1000, signal, false)).resolves.toBe(42);
    await expect(sweep.race(Promise.reject(new Error("no")), 1000, signal, false)).rejects.toThrow(
      "no",
    );
    expect(sweep.size).toBe(0);
  });

  it("ends each call at its own deadline, a shorter one added later first", async () => {
    const signal = new AbortController().signal;
    const long = outcome(sweep.race(never(), 1000, signal, false));
    await vi.advanceTimersByTimeAsync(100);
    const short = outcome(sweep.race(never(), 200, signal, false));
    const later = outcome(sweep.race(never(), 1000, signal, false));
    await vi.advanceTimersByTimeAsync(199);
    expect(short).toEqual({});
    await vi.advanceTimersByTimeAsync(1);
    expect(short).toEqual({ error: "expired" });
    expect(long).toEqual({});
    await vi.advanceTimersByTimeAsync(700);
    expect(long).toEqual({ error: "expired" });
    expect(later).toEqual({});
    await vi.advanceTimersByTimeAsync(100);
    expect(later).toEqual({ error: "expired" });
    expect(sweep.size).toBe(0);
  });

  it("ends a watched call when its signal aborts, an unwatched one at the next pass", async () => {
    const watched = new AbortController();
    const unwatched = new AbortController();
    const a = outcome(sweep.race(never(), 1000, watched.signal, true));
    const b = outcome(sweep.race(never(), 1000, unwatched.signal, false));
    const c = outcome(sweep.race(never(), 100, new AbortController().signal, false));
    watched.abort("client deadline");
    unwatched.abort("client gone");
    await vi.advanceTimersByTimeAsync(0);
    expect(a).toEqual({ error: "aborted: client deadline" });
    expect(b).toEqual({});
    await vi.advanceTimersByTimeAsync(100);
    expect(c).toEqual({ error: "expired" });
    expect(b).toEqual({ error: "aborted: client gone" });
    expect(sweep.size).toBe(0);
  });

  it("fails a call whose signal has already aborted, and catches its work's later failure", async () => {
    const gone = new AbortController();
    gone.abort("before");
    await expect(sweep.race(never(), 1000, gone.signal, false)).rejects.toBe("aborted: before");
    // Unhandled, this rejection would fail the run.
    const work = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("late")), 1));
    await expect(sweep.race(work, 1000, gone.signal, true)).rejects.toBe("aborted: before");
    await vi.advanceTimersByTimeAsync(1);
  });
});
