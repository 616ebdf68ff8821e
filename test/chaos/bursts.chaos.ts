import { spawn } from "node:child_process";
import type { ClientHttp2Session } from "node:http2";
import { connect as netConnect, type Socket } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ListSessionsRequestSchema } from "../../gen/practice/v1/practice_session_service_pb.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { endStatus, grpcFrame, h2Connect } from "../support/h2-raw.js";
import { sleep } from "../support/load.js";
import { listVia, percentile, reportFigures, startVia, tally } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * Ordinary bursts are served whole; slow senders hold nothing; true overload
 * is refused with 503 + Retry-After / `unavailable`, and /healthz answers.
 * The service as shipped: admission for a pool of 10, a 1,000-deep queue.
 */
let svc: TestService;
let quiz: QuizFixture;

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

const LIST = "/practice.v1.PracticeSessionService/ListSessions";
const port = () => Number(new URL(svc.baseUrl).port);

describe("bursts", () => {
  it("200 users starting at once get 200 × 201, and again 200 × 200", async () => {
    const users = Array.from({ length: 200 }, (_, i) => `class-${i}`);
    for (const [round, want] of [
      [1, 201],
      [2, 200],
    ] as const) {
      const t0 = performance.now();
      const outcomes = await Promise.all(users.map((u) => startVia(svc, "rest", u, quiz.quizId)));
      const ms = outcomes.map((o) => o.ms);
      reportFigures(`200 users at once, round ${round}`, {
        statuses: tally(outcomes, (o) => String(o.status ?? o.code)),
        wallMs: Math.round(performance.now() - t0),
        p50: Math.round(percentile(ms, 50)),
        p99: Math.round(percentile(ms, 99)),
      });
      expect(tally(outcomes, (o) => String(o.status ?? o.code))).toEqual({ [want]: 200 });
    }
  });

  it("500 concurrent unary calls on one HTTP/2 connection (different users) all succeed", async () => {
    const headers = await Promise.all(
      Array.from({ length: 500 }, (_, i) => svc.auth(`one-connection-${i}`)),
    );
    const t0 = performance.now();
    // grpc-js: one channel, one connection; calls past its 100 streams wait in the client.
    const codes = await Promise.all(
      headers.map((h) =>
        svc.grpc.listSessions({ quizId: quiz.quizId }, h).then(
          () => 0,
          (e: { code: number }) => e.code,
        ),
      ),
    );
    reportFigures("500 calls on one HTTP/2 connection", {
      codes: tally(codes, String),
      wallMs: Math.round(performance.now() - t0),
    });
    expect(tally(codes, String)).toEqual({ 0: 500 });
  });
});

/** A Connect POST over HTTP/1.1 that declares a body and never sends it. */
function slowHttp1(token: string | undefined): Socket {
  const socket = netConnect(port(), "127.0.0.1");
  socket.on("error", () => {});
  socket.write(
    `POST ${LIST} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n` +
      (token ? `authorization: Bearer ${token}\r\n` : "") +
      "\r\n",
  );
  return socket;
}

/** A gRPC call whose HEADERS come without END_STREAM, and no DATA. */
function unfinishedGrpc(session: ClientHttp2Session, token: string | undefined) {
  const stream = session.request({
    ":method": "POST",
    ":path": LIST,
    "content-type": "application/grpc",
    te: "trailers",
    ...(token ? { authorization: `Bearer ${token}` } : {}),
  });
  stream.on("error", () => {});
  return stream;
}

describe("slow senders", () => {
  it("with 50 slow or unfinished requests held open, with and without a token, others keep ≥ 99% success", async () => {
    const token = await svc.token("slow");
    const sockets = Array.from({ length: 26 }, (_, i) => slowHttp1(i % 2 ? token : undefined));
    const sessions = await Promise.all([h2Connect(svc.baseUrl), h2Connect(svc.baseUrl)]);
    const streams = Array.from({ length: 24 }, (_, i) =>
      unfinishedGrpc(sessions[i % 2] as ClientHttp2Session, i % 4 < 2 ? token : undefined),
    );
    try {
      await sleep(300);
      const outcomes = [];
      const t0 = performance.now();
      // 200 calls from ordinary callers, 4 at a time, over REST and gRPC.
      for (let i = 0; i < 50; i++) {
        outcomes.push(
          ...(await Promise.all([
            listVia(svc, "rest", `other-${i % 5}`, quiz.quizId),
            listVia(svc, "grpc", `other-${i % 5}`, quiz.quizId),
            startVia(svc, "rest", `other-${i}`, quiz.quizId),
            startVia(svc, "connect", `other-c-${i}`, quiz.quizId),
          ])),
        );
      }
      const ok = outcomes.filter((o) => o.code === "ok").length;
      reportFigures("others' calls while 50 slow requests are held", {
        calls: outcomes.length,
        codes: tally(outcomes, (o) => o.code),
        seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
        p99: Math.round(
          percentile(
            outcomes.map((o) => o.ms),
            99,
          ),
        ),
      });
      expect(ok / outcomes.length).toBeGreaterThanOrEqual(0.99);
    } finally {
      for (const s of sockets) s.destroy();
      for (const s of streams) s.close();
      for (const s of sessions) s.destroy();
    }
  });

  it("cuts off a request head that does not arrive within a few seconds (408, connection closed)", async () => {
    const socket = netConnect(port(), "127.0.0.1");
    const answer = await new Promise<string>((resolve) => {
      let got = "";
      socket.on("data", (c) => {
        got += c;
      });
      socket.on("close", () => resolve(got));
      socket.on("error", () => {});
      socket.write(`GET /healthz HTTP/1.1\r\nhost: x\r\n`); // the head never ends
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  }, 20_000);
});

describe("unfinished HTTP/2 requests", () => {
  it("resets a gRPC stream whose request has not ended within the read limit", async () => {
    const session = await h2Connect(svc.baseUrl);
    try {
      const stream = unfinishedGrpc(session, await svc.token("stalled"));
      const t0 = performance.now();
      const status = await endStatus(stream);
      reportFigures("unfinished HTTP/2 request", {
        status,
        seconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
      });
      // Reset (CANCEL) or answered with an error: not left open.
      expect(status).not.toBe(0);
    } finally {
      session.destroy();
    }
  }, 30_000);
});

describe("twice the saturating load", () => {
  it("refuses the excess with 503 + Retry-After / unavailable, and /healthz answers", async () => {
    const message = grpcFrame(
      toBinary(
        ListSessionsRequestSchema,
        create(ListSessionsRequestSchema, { quizId: quiz.quizId }),
      ),
    ).toString("base64");
    const common = {
      baseUrl: svc.baseUrl,
      quizId: quiz.quizId,
      // Overload as it comes: many users, none over its share.
      tokens: await Promise.all(Array.from({ length: 200 }, (_, i) => svc.token(`load-${i}`))),
      message,
    };
    // The saturated rate: 40 callers in a closed loop for 3 s, from a process of their own.
    const saturateCpu = process.cpuUsage();
    const { served, cpuMs: saturateLoadCpuMs } = (await loadProcess({
      ...common,
      mode: "saturate",
      seconds: 3,
    })) as { served: number; cpuMs: number };
    const saturateServiceCpuMs = cpuMsSince(saturateCpu);
    const rate = served / 3;
    const healthz: number[] = [];
    let loading = true;
    const probe = (async () => {
      while (loading) {
        const t0 = performance.now();
        const res = await fetch(`${svc.baseUrl}/healthz`);
        if (res.status === 200) healthz.push(performance.now() - t0);
        await sleep(250);
      }
    })();
    // Open loop at twice that rate for 5 s.
    const openCpu = process.cpuUsage();
    const { tally: outcomes, cpuMs: openLoadCpuMs } = (await loadProcess({
      ...common,
      mode: "open",
      rate: 2 * rate,
      seconds: 5,
    })) as { tally: Record<string, number>; cpuMs: number };
    const openServiceCpuMs = cpuMsSince(openCpu);
    loading = false;
    await probe;
    const ok = (outcomes["grpc 0"] ?? 0) + (outcomes["rest 200 -"] ?? 0);
    reportFigures("twice the saturating load", {
      saturatedPerSecond: Math.round(rate),
      outcomes,
      goodputOfSaturated: Number((ok / 5 / rate).toFixed(2)),
      // CPU time of the service (this process) and of the load process, per phase.
      cpuMs: {
        saturate: { service: saturateServiceCpuMs, load: saturateLoadCpuMs },
        twice: { service: openServiceCpuMs, load: openLoadCpuMs },
      },
      healthzAnswered: healthz.length,
      healthzMaxMs: Math.round(Math.max(...healthz)),
    });
    // Every answer: served, or refused as overload (503 with Retry-After /
    // unavailable), or past its deadline; nothing else.
    const allowed = new Set([
      "grpc 0",
      `grpc ${Code.Unavailable}`,
      `grpc ${Code.DeadlineExceeded}`,
      "rest 200 -",
      "rest 503 1",
      "rest 504 -",
    ]);
    expect(Object.keys(outcomes).filter((k) => !allowed.has(k))).toEqual([]);
    // /healthz answered throughout (a bounded wait, not a speed target).
    expect(healthz.length).toBeGreaterThanOrEqual(10);
    expect(Math.max(...healthz)).toBeLessThan(5000);
  });
});

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(start);
  return Math.round((user + system) / 1000);
}

/** Runs test/support/open-loop.ts with `args` in a child process; resolves with what it printed. */
function loadProcess(args: Record<string, unknown>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "test/support/open-loop.ts", JSON.stringify(args)],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.once("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load process exited ${code}`)),
    );
  });
}
