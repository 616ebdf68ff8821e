import { describe, expect, it } from "vitest";
import { FairQueue } from "./fair-queue.js";

describe("FairQueue", () => {
  it("serves callers in turn, each caller's oldest first, so one caller's many wait behind another's one", () => {
    const q = new FairQueue<string>();
    for (const item of ["a1", "a2", "a3"]) q.add("a", 0, item);
    q.add("b", 1, "b1");
    const order = [q.take(false), q.take(false), q.take(false), q.take(false)].map((e) => e?.item);
    expect(order).toEqual(["a1", "b1", "a2", "a3"]);
    expect(q.size).toBe(0);
    expect(q.take(false)).toBeUndefined();
  });

  it("serves a caller's newest first when asked, and keeps the whole queue's oldest across removals", () => {
    const q = new FairQueue<string>();
    const a1 = q.add("a", 0, "a1");
    q.add("a", 1, "a2");
    q.add("b", 2, "b1");
    expect(q.take(true)?.item).toBe("a2");
    expect(q.oldest?.item).toBe("a1");
    expect(q.remove(a1)).toBe(true);
    expect(q.remove(a1)).toBe(false);
    expect([q.oldest?.item, q.countOf("a"), q.countOf("b"), q.size]).toEqual(["b1", 0, 1, 1]);
  });

  it("names the caller with the most waiting", () => {
    const q = new FairQueue<number>();
    q.add("x", 0, 1);
    q.add("y", 0, 2);
    q.add("y", 0, 3);
    expect(q.longest()).toMatchObject({ key: "y", count: 2 });
  });
});
