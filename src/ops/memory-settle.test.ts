import { getHeapStatistics } from "node:v8";
import { describe, expect, it } from "vitest";
import { MemorySettle } from "./memory-settle.js";

const MB = 1024 * 1024;
/** The manifest's memory limit. */
const LIMIT = 640 * MB;

/** A settle over an RSS the test sets; a collection brings it to `left`. */
function settle(start: number) {
  const state = { rss: start, left: start, busy: 0, collected: 0 };
  const quietFor = (looks: number) => {
    for (let i = 0; i < looks; i++) memory.look();
  };
  const memory = new MemorySettle({
    rss: () => state.rss,
    busy: () => state.busy,
    collect: () => {
      state.collected++;
      state.rss = state.left;
    },
    limit: LIMIT,
  });
  // Quiet long enough from the start, unless a test says otherwise.
  quietFor(2);
  return { memory, state, quietFor };
}

describe("memory given back once the service is quiet", () => {
  it("collects when RSS stands a quarter above the quiet footprint, once, and again after the next flood", () => {
    const { memory, state } = settle(120 * MB);
    state.rss = 145 * MB;
    memory.look();
    expect(state.collected).toBe(0);
    state.rss = 450 * MB;
    memory.look();
    expect(state.collected).toBe(1);
    memory.look();
    memory.look();
    expect(state.collected).toBe(1);
    state.rss = 300 * MB;
    memory.look();
    expect(state.collected).toBe(2);
  });

  it("does not collect again and again what a collection cannot give back", () => {
    const { memory, state } = settle(120 * MB);
    state.rss = 400 * MB;
    state.left = 280 * MB;
    memory.look();
    expect(state.collected).toBe(1);
    memory.look();
    state.rss = 290 * MB;
    memory.look();
    expect(state.collected).toBe(1);
    // More than what the last collection left: worth another.
    state.rss = 300 * MB;
    memory.look();
    expect(state.collected).toBe(2);
  });

  it("keeps a service warm between bursts: quiet for three looks in a row before it collects", () => {
    const { memory, state, quietFor } = settle(120 * MB);
    state.rss = 400 * MB;
    state.busy = 0.3;
    memory.look();
    state.busy = 0;
    quietFor(2);
    expect(state.collected).toBe(0);
    state.busy = 0.3;
    memory.look();
    state.busy = 0;
    quietFor(2);
    expect(state.collected).toBe(0);
    memory.look();
    expect(state.collected).toBe(1);
  });

  it("leaves a service far below its memory limit to V8: its warm code is worth more", () => {
    const { memory, state, quietFor } = settle(60 * MB);
    state.rss = 150 * MB;
    quietFor(5);
    expect(state.collected).toBe(0);
    state.rss = 170 * MB;
    memory.look();
    expect(state.collected).toBe(1);
  });

  it("makes no context for V8's collection until one is due", () => {
    const contexts = getHeapStatistics().number_of_native_contexts;
    const memory = new MemorySettle({ rss: () => 0, busy: () => 1, limit: LIMIT });
    memory.look();
    expect(getHeapStatistics().number_of_native_contexts).toBe(contexts);
  });

  it("leaves a busy service to V8, however much it grew", () => {
    const { memory, state, quietFor } = settle(120 * MB);
    state.rss = 400 * MB;
    state.busy = 0.2;
    memory.look();
    expect(state.collected).toBe(0);
    state.busy = 0.01;
    quietFor(3);
    expect(state.collected).toBe(1);
  });
});
