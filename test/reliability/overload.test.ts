import { Writable } from "node:stream";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ListSessionsRequestSchema } from "../../gen/practice/v1/practice_session_service_pb.js";
import { admissionConfig } from "../../src/config.js";
import { Admission } from "../../src/ops/admission.js";
import { testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { endStatus, grpcFrame, grpcRequest, h2Connect } from "../support/h2-raw.js";
import { reportFigures, tally } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

/** A service that logs at info into `lines`. */
async function loggedService(options: Parameters<typeof startTestService>[0] = {}) {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  const svc = await startTestService({ ...options, logger: pino({ level: "info" }, sink) });
  return { svc, lines };
}

/**
 * A logged service with `admission` for the tests of one describe: started
 * before them (`use` takes it), closed after them.
 */
function withLoggedService(
  admission: Admission,
  use: (started: Awaited<ReturnType<typeof loggedService>>) => void | Promise<void>,
) {
  let svc: TestService | undefined;
  beforeAll(async () => {
    const started = await loggedService({ admission });
    svc = started.svc;
    await use(started);
  });
  afterAll(async () => {
    await svc?.close();
  });
}

/**
 * `withLoggedService` with a quiz inserted before the tests: the returned
 * object is filled in by then.
 */
function withQuizService(admission: Admission) {
  const ctx = {} as { svc: TestService; lines: string[]; quiz: QuizFixture };
  withLoggedService(admission, async (started) => {
    Object.assign(ctx, started, { quiz: await insertQuiz(started.svc.db) });
  });
  return ctx;
}

/** The log lines that are not the one-per-request access line. */
const failureLines = (lines: string[]) =>
  lines
    .map((l) => JSON.parse(l) as { msg: string; level: number })
    .filter((l) => l.msg !== "request");

const LIST_PATH = "/practice.v1.PracticeSessionService/ListSessions";

async function until(done: () => boolean, ms = 3000) {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
}

/** Admission for one call at a time and `maxQueued` waiters; the queue never stands within a test (a full one refuses the newcomer). */
const oneSlot = (maxQueued = 1) =>
  new Admission({
    ...admissionConfig({}, 1),
    maxQueued,
    intervalMs: 600_000,
  });

/** A ListSessions request for `quizId` as one gRPC message. */
const listRequest = (quizId: string) =>
  grpcFrame(toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { quizId })));

describe("admission control", () => {
  const admission = oneSlot();
  const ctx = withQuizService(admission);

  it("sheds calls beyond the limit at once (REST 503 + Retry-After, RPC unavailable); a cancelled waiter leaves the queue", async () => {
    const { svc, lines, quiz } = ctx;
    const list = `/quizzes/${quiz.quizId}/sessions`;
    const headers = await svc.auth("u");
    const t0 = performance.now();
    // The one slot is busy (held here, as a slow request would hold it).
    const busy = await admission.acquire();
    const waiting = new AbortController();
    const queued = admission.acquire(waiting.signal).then(
      () => "admitted",
      () => "aborted",
    );
    await until(() => admission.queued === 1);
    expect(admission.queued).toBe(1);

    const rest = await Promise.all(Array.from({ length: 40 }, () => svc.rest("u", "GET", list)));
    const grpc = await Promise.all(
      Array.from({ length: 10 }, () =>
        svc.grpc.listSessions({ quizId: quiz.quizId }, headers).then(
          () => 0,
          (e: { code: number }) => e.code,
        ),
      ),
    );
    const connect = await Promise.all(
      Array.from({ length: 10 }, () =>
        svc.connect.listSessions({ quizId: quiz.quizId }, { headers }).then(
          () => 0,
          (e) => ConnectError.from(e).code,
        ),
      ),
    );
    expect(tally(rest, (r) => `${r.status} ${r.headers.get("retry-after")}`)).toEqual({
      "503 1": 40,
    });
    expect(await rest[0]?.json()).toMatchObject({ status: 503, code: "unavailable" });
    expect(grpc).toEqual(grpc.map(() => Code.Unavailable));
    expect(connect).toEqual(connect.map(() => Code.Unavailable));

    // The queued client gives up: its place is freed at once, it never runs.
    waiting.abort();
    expect(await queued).toBe("aborted");
    await until(() => admission.queued === 0);
    expect(admission.queued).toBe(0);
    busy();
    expect((await svc.rest("u", "GET", list)).status).toBe(200);
    expect(admission.inFlight).toBe(0);

    // 60 shed calls: a few short warnings (10 a second at most), no error, no stack.
    const seconds = (performance.now() - t0) / 1000;
    const failures = failureLines(lines);
    reportFigures("shed calls and their log", {
      shed: rest.length + grpc.length + connect.length,
      failureLines: failures.length,
      levels: tally(failures, (l) => String(l.level)),
    });
    expect(failures.length).toBeLessThanOrEqual(10 + Math.ceil(10 * seconds));
    expect(failures.every((l) => l.level === 40)).toBe(true);
    expect(lines.some((l) => l.includes('"stack"'))).toBe(false);
  });
});

describe("slots count work, not waiting", () => {
  // One slot, held here: whatever waits for it is in the queue.
  const admission = oneSlot(5);
  const ctx = withQuizService(admission);

  it("gives no slot or queue place to a call without a valid token, or whose body is still coming", async () => {
    const { svc, quiz } = ctx;
    const busy = await admission.acquire();
    const session = await h2Connect(svc.baseUrl);
    try {
      // No token: refused for that, not queued behind the busy slot.
      const grpc = await endStatus(grpcRequest(session, LIST_PATH, listRequest(quiz.quizId)));
      const rest = await fetch(`${svc.baseUrl}/quizzes/${quiz.quizId}/sessions`);
      expect([grpc, rest.status, admission.queued]).toEqual([Code.Unauthenticated, 401, 0]);
      // A valid token, but the body has not all come: no place in the queue.
      const headers = await svc.auth("u");
      const slow = session.request({
        ":method": "POST",
        ":path": LIST_PATH,
        "content-type": "application/grpc",
        te: "trailers",
        ...headers,
      });
      slow.on("error", () => {});
      slow.write(listRequest(quiz.quizId).subarray(0, 3));
      await new Promise((r) => setTimeout(r, 200));
      expect(admission.queued).toBe(0);
      // Once it has, it waits for the slot.
      slow.end(listRequest(quiz.quizId).subarray(3));
      await until(() => admission.queued === 1);
      expect(admission.queued).toBe(1);
      const status = endStatus(slow);
      busy();
      expect(await status).toBe(0);
    } finally {
      busy();
      session.destroy();
    }
  });
});

describe("slots of calls that fail", () => {
  // One slot and no queue: a slot kept by any call would refuse every later one.
  const admission = oneSlot(0);
  let svc: TestService;

  withLoggedService(admission, (started) => {
    svc = started.svc;
  });

  it("frees the slot of a call refused for its input, over HTTP/1.1 and HTTP/2", async () => {
    const headers = { "content-type": "application/json", ...(await svc.auth("u")) };
    const session = await h2Connect(svc.baseUrl);
    try {
      const statuses: string[] = [];
      for (const body of ["garbage", "", '{"quizId":"","limit":2147483648}', '{"quizId":"x"}']) {
        const res = await fetch(`${svc.baseUrl}${LIST_PATH}`, { method: "POST", headers, body });
        statuses.push(`${res.status} ${((await res.json()) as { code: string }).code}`);
        await until(() => admission.inFlight === 0);
        statuses.push(
          String(await endStatus(grpcRequest(session, LIST_PATH, grpcFrame(Buffer.from(body))))),
        );
        await until(() => admission.inFlight === 0);
      }
      expect(
        statuses.filter((s) => s.includes("unavailable") || s === String(Code.Unavailable)),
      ).toEqual([]);
      expect(admission.inFlight).toBe(0);
    } finally {
      session.destroy();
    }
  });
});

describe("log lines of a flood of refused calls", () => {
  // The one slot is held: every gRPC call is refused at once.
  const admission = oneSlot(0);
  const ctx = withQuizService(admission);

  it("writes at most 100 a second, each saying how many it left out; served calls all get theirs", async () => {
    const { svc, lines, quiz } = ctx;
    const busy = await admission.acquire();
    const session = await h2Connect(svc.baseUrl);
    const headers = await svc.auth("u");
    const message = listRequest(quiz.quizId);
    const t0 = performance.now();
    const shed = 400;
    const shedRest = 300;
    let statuses: number[];
    try {
      statuses = await Promise.all([
        ...Array.from({ length: shed }, () =>
          endStatus(grpcRequest(session, LIST_PATH, message, headers)),
        ),
        ...Array.from({ length: shedRest }, () =>
          fetch(`${svc.baseUrl}/quizzes/1/sessions`, { headers }).then((r) => r.status),
        ),
      ]);
    } finally {
      session.destroy();
      busy();
    }
    const seconds = (performance.now() - t0) / 1000;
    expect(tally(statuses, String)).toEqual({ [Code.Unavailable]: shed, 503: shedRest });
    // Served calls keep every line, flood or not.
    for (let i = 0; i < 5; i++) {
      expect((await svc.rest("u", "GET", `/quizzes/${quiz.quizId}/sessions`)).status).toBe(200);
    }
    // One more refused call, once the budget has a line again: it carries the last count.
    await new Promise((r) => setTimeout(r, 20));
    expect((await fetch(`${svc.baseUrl}/quizzes/1/sessions`)).status).toBe(401);

    const requests = lines
      .map((l) => JSON.parse(l) as { msg: string; code?: string; suppressed?: number })
      .filter((l) => l.msg === "request");
    const refused = requests.filter(
      (l) => l.code === "unavailable" || l.code === "unauthenticated",
    );
    const leftOut = refused.reduce((sum, l) => sum + (l.suppressed ?? 0), 0);
    expect(requests.filter((l) => l.code === "ok")).toHaveLength(5);
    reportFigures("log of a flood of refused calls", {
      calls: shed + shedRest + 1,
      seconds: Number(seconds.toFixed(2)),
      lines: refused.length,
      leftOut,
      bytes: lines.join("\n").length,
    });
    expect(refused.length).toBeLessThanOrEqual(100 + Math.ceil(100 * seconds) + 1);
    // Every refused call is either written or counted in a later line.
    expect(refused.length + leftOut).toBe(shed + shedRest + 1);
  });
});

describe.skipIf(testStore() === "sqlite")("logs during a database outage", () => {
  it("logs shed requests at warn without stacks, rate-limited", async () => {
    const { svc, lines } = await loggedService({ proxy: true });
    try {
      const quiz = await insertQuiz(svc.db);
      await svc.proxy?.cut();
      const t0 = performance.now();
      const statuses = [];
      for (let i = 0; i < 100; i++) {
        statuses.push((await svc.rest("u", "GET", `/quizzes/${quiz.quizId}/sessions`)).status);
      }
      expect(statuses).toEqual(statuses.map(() => 503));
      const failures = failureLines(lines);
      const bytes = lines.filter((l) => !l.includes('"msg":"request"')).join("\n").length;
      reportFigures("log of 100 requests during an outage", {
        failureLines: failures.length,
        bytes,
        levels: tally(failures, (l) => String(l.level)),
      });
      expect(failures.every((l) => l.level === 40)).toBe(true);
      expect(lines.some((l) => l.includes('"stack"'))).toBe(false);
      const seconds = (performance.now() - t0) / 1000;
      expect(failures.length).toBeLessThanOrEqual(10 + Math.ceil(10 * seconds));
    } finally {
      await svc.close();
    }
  });
});
