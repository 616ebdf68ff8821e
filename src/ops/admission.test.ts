import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { admissionConfig } from "../config.js";
import { Admission, type AdmissionLimits, type Release } from "./admission.js";

const STANDING_WAIT_MS = admissionConfig({}).standingWaitMs;

/** An Admission on a clock the test moves: one slot, three places, 5 ms over 100 ms, unless `limits` says otherwise. */
function admissionAt(limits: Partial<AdmissionLimits> = {}, loopBusy?: () => number) {
  const clock = { now: 0 };
  const all = { ...admissionConfig({}, 1), maxQueued: 3, maxQueuedPerUser: 100 };
  return { admission: new Admission({ ...all, ...limits }, () => clock.now, loopBusy), clock };
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

/** Releases `running`'s slot at `clock.now` and returns the waiter it went to. */
async function handOver(running: { release?: Release }, waiters: { is: string }[]) {
  const before = waiters.map((w) => w.is);
  running.release?.();
  await settle();
  return waiters.findIndex((w, i) => w.is === "admitted" && before[i] === "waiting");
}

/** One call running and the calls that join the queue behind it, each served in turn as the running one hands its slot over. */
function line(admission: Admission) {
  let running = track(admission.acquire());
  const waiters: ReturnType<typeof track>[] = [];
  return {
    waiters,
    join: () => waiters.push(track(admission.acquire())),
    /** Hands the slot over; returns the index of the waiter that got it. */
    serve: async () => {
      const next = await handOver(running, waiters);
      running = waiters[next] as typeof running;
      return next;
    },
    release: () => running.release?.(),
  };
}

/** A full queue of two kept standing for 140 ms, each call served after waiting 20 ms or more; `refused` came when it was first full. */
async function standingFullQueue() {
  const { admission, clock } = admissionAt({ maxQueued: 2 });
  const queue = line(admission);
  queue.join();
  queue.join();
  const refused = track(admission.acquire());
  await settle();
  for (let t = 20; t <= 140; t += 20) {
    clock.now = t;
    await queue.serve();
    queue.join();
  }
  expect(admission.standing()).toBe(true);
  return { admission, clock, refused, oldest: queue.waiters.find((w) => w.is === "waiting") };
}

/** An adaptive Admission of ten slots on a clock the test moves, the event loop as busy as `loopBusy` says. */
function adaptiveAt(loopBusy: () => number) {
  const { admission, clock } = admissionAt(
    { ...admissionConfig({ ADAPTIVE_ADMISSION: "true" }, 10), maxQueued: 100 },
    loopBusy,
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
  return { admission, calls, window };
}

describe("Admission", () => {
  it("runs maxInFlight at once, queues maxQueued, refuses the next at once", async () => {
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
    expect([admission.shed, admission.queued]).toEqual([1, 3]);
    first.release?.();
    await settle();
    expect(queued.map((q) => q.is)).toEqual(["admitted", "waiting", "waiting"]);
    expect(admission.inFlight).toBe(1);
  });

  it("lets a waiter wait until its own deadline, however long, then says why it left", async () => {
    const { admission, clock } = admissionAt();
    const running = track(admission.acquire());
    const deadline = new AbortController();
    const patient = track(admission.acquire(deadline.signal));
    clock.now = 60_000;
    await new Promise((r) => setTimeout(r, 20));
    expect(patient.is).toBe("waiting");
    deadline.abort(new ConnectError("deadline passed", Code.DeadlineExceeded));
    await settle();
    expect([patient.is, admission.queued, admission.shed]).toEqual(["DeadlineExceeded", 0, 0]);
    running.release?.();
    expect(admission.inFlight).toBe(0);
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

  it("serves a whole burst the queue holds, oldest first, however long it takes to drain", async () => {
    const { admission, clock } = admissionAt({ maxInFlight: 2, maxQueued: 500 });
    const burst = Array.from({ length: 502 }, () => track(admission.acquire()));
    await settle();
    const order: number[] = [];
    // 5 ms per call, two at a time: the last waits 1.25 s, far past the interval.
    for (let done = 0; done < 502; done++) {
      clock.now += 2.5;
      const running = burst.find((b) => b.is === "admitted" && b.release);
      const next = await handOver(running ?? {}, burst);
      if (running) delete running.release;
      if (next >= 0) order.push(next);
    }
    expect(burst.filter((b) => b.is === "admitted")).toHaveLength(502);
    expect(admission.shed).toBe(0);
    // No newcomers while it drained: oldest first until the queue stood, newest first after.
    expect(order.slice(0, 30)).toEqual(Array.from({ length: 30 }, (_, i) => i + 2));
  });

  it("serves newest first once the queue's delay has stood over the target for a whole interval", async () => {
    const { admission, clock } = admissionAt({ maxQueued: 100 });
    const queue = line(admission);
    const { waiters } = queue;
    queue.join();
    await settle();
    // Sustained overload: a newcomer each 10 ms, a call served each 20 ms.
    const served: number[] = [];
    for (let t = 10; t <= 400; t += 10) {
      clock.now = t;
      queue.join();
      if (t % 20 === 0) served.push(await queue.serve());
    }
    expect(admission.standing()).toBe(true);
    // First oldest first (0, 1, 2, ...); once the queue stood, the newest waiter each time.
    expect(served.slice(0, 3)).toEqual([0, 1, 2]);
    expect(served.slice(-3)).toEqual([
      waiters.length - 1 - 4,
      waiters.length - 1 - 2,
      waiters.length - 1,
    ]);
  });

  it("under a standing queue, a full queue sheds its oldest waiter for the newcomer once it has waited STANDING_WAIT_MS; else refuses the newcomer", async () => {
    const { admission, clock, refused, oldest } = await standingFullQueue();
    expect(refused.is).toBe("Unavailable");
    const early = track(admission.acquire());
    await settle();
    expect([oldest?.is, early.is, admission.queued]).toEqual(["waiting", "Unavailable", 2]);
    clock.now = 140 + STANDING_WAIT_MS;
    const newcomer = track(admission.acquire());
    await settle();
    expect([oldest?.is, newcomer.is, admission.queued]).toEqual(["Unavailable", "waiting", 2]);
    expect(admission.shed).toBe(3);
  });

  it("stops standing once the queue has drained", async () => {
    const { admission, clock } = admissionAt({ maxQueued: 10 });
    const queue = line(admission);
    queue.join();
    await settle();
    for (let t = 20; t <= 200; t += 20) {
      clock.now = t;
      queue.join();
      await queue.serve();
    }
    expect(admission.standing()).toBe(true);
    while (admission.queued > 0) await queue.serve();
    queue.release();
    clock.now = 300;
    const fresh = track(admission.acquire());
    const second = track(admission.acquire());
    await settle();
    expect([fresh.is, second.is, admission.standing()]).toEqual(["admitted", "waiting", false]);
  });

  it("refuses at the door only when every slot is busy and the queue full, counting it as shed", async () => {
    const { admission } = admissionAt({ maxQueued: 1 });
    expect(admission.refusalBeforeRead()).toBeUndefined();
    track(admission.acquire());
    expect(admission.refusalBeforeRead()).toBeUndefined();
    track(admission.acquire());
    await settle();
    expect([admission.refusalBeforeRead()?.code, admission.shed, admission.queued]).toEqual([
      Code.Unavailable,
      1,
      1,
    ]);
  });

  it("at the door, a standing full queue lets the newcomer in once its oldest waiter has waited STANDING_WAIT_MS, and the queue then sheds that waiter", async () => {
    const { admission, clock, oldest } = await standingFullQueue();
    let shedBefore = admission.shed;
    // Not yet STANDING_WAIT_MS: the newcomer is refused.
    expect(admission.refusalBeforeRead()?.code).toBe(Code.Unavailable);
    await settle();
    expect([oldest?.is, admission.queued, admission.shed - shedBefore]).toEqual(["waiting", 2, 1]);
    clock.now = 140 + STANDING_WAIT_MS;
    shedBefore = admission.shed;
    expect(admission.refusalBeforeRead()).toBeUndefined();
    const newcomer = track(admission.acquire());
    await settle();
    expect([oldest?.is, newcomer.is, admission.queued, admission.shed - shedBefore]).toEqual([
      "Unavailable",
      "waiting",
      2,
      1,
    ]);
  });

  it("serves waiting callers in turn: one caller's many waiting calls delay another's by one turn at most", async () => {
    const { admission } = admissionAt({
      ...admissionConfig({}, 1),
      maxQueuedPerUser: 100,
    });
    let running = track(admission.acquire(undefined, "", "heavy"));
    const heavy = Array.from({ length: 10 }, () =>
      track(admission.acquire(undefined, "", "heavy")),
    );
    const light = track(admission.acquire(undefined, "", "light"));
    await settle();
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      running.release?.();
      await settle();
      const next = [...heavy, light].find((w) => w.is === "admitted");
      order.push(next === light ? "light" : "heavy");
      running = next ?? { is: "none" };
      if (next) next.is = "done";
    }
    expect(order).toEqual(["heavy", "light", "heavy"]);
  });

  it("refuses a caller over its share of the queue with resource_exhausted, at the door and in the queue, while others still wait", async () => {
    const { admission } = admissionAt({
      ...admissionConfig({}, 1),
      maxQueuedPerUser: 2,
    });
    track(admission.acquire(undefined, "", "heavy"));
    const queued = [1, 2].map(() => track(admission.acquire(undefined, "", "heavy")));
    const over = track(admission.acquire(undefined, "", "heavy"));
    const other = track(admission.acquire(undefined, "", "other"));
    await settle();
    expect([...queued.map((q) => q.is), over.is, other.is]).toEqual([
      "waiting",
      "waiting",
      "ResourceExhausted",
      "waiting",
    ]);
    expect(admission.refusalBeforeRead("heavy")?.code).toBe(Code.ResourceExhausted);
    expect(admission.refusalBeforeRead("other")).toBeUndefined();
    expect(admission.refusedOverShare).toBe(2);
  });

  it("lets a caller alone use every slot, whatever its share of the queue", async () => {
    const { admission } = admissionAt({
      ...admissionConfig({}, 3),
      maxQueuedPerUser: 1,
    });
    const calls = [1, 2, 3].map(() => track(admission.acquire(undefined, "", "alone")));
    await settle();
    expect(calls.map((c) => c.is)).toEqual(["admitted", "admitted", "admitted"]);
  });

  it("with the whole queue full, sheds the oldest waiter of the caller with the most waiting for another caller's newcomer", async () => {
    const { admission } = admissionAt();
    track(admission.acquire(undefined, "", "heavy"));
    const heavy = [1, 2, 3].map(() => track(admission.acquire(undefined, "", "heavy")));
    const light = track(admission.acquire(undefined, "", "light"));
    await settle();
    expect([...heavy.map((h) => h.is), light.is]).toEqual([
      "Unavailable",
      "waiting",
      "waiting",
      "waiting",
    ]);
  });

  it("runs work in its slot and holds the slot until the work stops, though the call is answered when its signal aborts", async () => {
    const { admission } = admissionAt();
    const stop = new AbortController();
    let finish: () => void = () => {};
    const work = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const result = admission
      .run({ signal: stop.signal }, () => work)
      .then(
        () => "ok",
        (err) => Code[ConnectError.from(err).code],
      );
    await settle();
    stop.abort(new ConnectError("late", Code.DeadlineExceeded));
    expect(await result).toBe("DeadlineExceeded");
    expect(admission.inFlight).toBe(1);
    finish();
    await settle();
    expect(admission.inFlight).toBe(0);
  });

  it("adaptive: runs fewer at once (not under 3) while calls take over twice their usual time", async () => {
    const { admission, calls, window } = adaptiveAt(() => 1); // the event loop always busy
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
    const busy = { utilization: 0.5 };
    const adaptive = adaptiveAt(() => busy.utilization);
    const { admission } = adaptive;
    const window = async (ms: number) => {
      await adaptive.window([5, "list", ms]);
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

describe("a call whose connection cannot take an answer", () => {
  it("gives its slot to another call, and runs once its connection can take one", async () => {
    const admission = new Admission({ ...admissionConfig({}, 1), maxQueuedPerUser: 10 });
    let full = true;
    let opened = () => {};
    const room = () =>
      full
        ? new Promise<void>((resolve) => {
            opened = resolve;
          })
        : undefined;
    const ran: string[] = [];
    const held = admission.run({ key: "user:a", room }, async () => {
      ran.push("held");
    });
    const other = admission.run({ key: "user:b" }, async () => {
      ran.push("other");
    });
    await other;
    expect(ran).toEqual(["other"]);
    expect(admission.inFlight).toBe(0);
    full = false;
    opened();
    await held;
    expect(ran).toEqual(["other", "held"]);
  });

  it("stops waiting when its client leaves, without running", async () => {
    const admission = new Admission({ ...admissionConfig({}, 1), maxQueuedPerUser: 10 });
    const left = new AbortController();
    let ran = false;
    const call = admission.run(
      { signal: left.signal, room: () => new Promise<void>(() => {}) },
      async () => {
        ran = true;
      },
    );
    left.abort(new ConnectError("client left", Code.Canceled));
    await expect(call).rejects.toMatchObject({ code: Code.Canceled });
    expect(ran).toBe(false);
    expect(admission.inFlight).toBe(0);
  });
});
