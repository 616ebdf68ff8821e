import { connect as http2Connect } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
const USER = "limits-user";
const REQUEST_TIMEOUT_MS = 400;

beforeAll(async () => {
  svc = await startTestService({ requestTimeoutMs: REQUEST_TIMEOUT_MS });
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

/**
 * Runs `body` while another connection holds `LOCK TABLES quizzes WRITE`:
 * every start and list reads quizzes, so they wait on the database.
 */
async function withQuizzesLocked(body: () => Promise<void>) {
  const locker = await createConnection({ uri: svc.database.url });
  await locker.query("LOCK TABLES quizzes WRITE");
  try {
    await body();
  } finally {
    await locker.query("UNLOCK TABLES");
    await locker.end();
  }
}

async function timed<T>(work: Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await work;
  return [result, performance.now() - start];
}

// Holding a request needs MySQL's LOCK TABLES.
describe.skipIf(testStore() === "sqlite")("request deadline (REQUEST_TIMEOUT_MS)", () => {
  it("answers deadline_exceeded on every transport when the database keeps a request waiting", async () => {
    const auth = await svc.auth(USER);
    await withQuizzesLocked(async () => {
      const [rest, ms] = await timed(svc.rest(USER, "GET", `/quizzes/${quiz.quizId}/sessions`));
      expect(rest.status).toBe(504);
      expect(rest.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(await rest.json()).toEqual({
        type: "about:blank",
        title: "Gateway Timeout",
        status: 504,
        detail: "the request took longer than its deadline",
        code: "deadline_exceeded",
      });
      expect(ms).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 20);
      expect(ms).toBeLessThan(REQUEST_TIMEOUT_MS + 1000);

      const post = await svc.rest(USER, "POST", `/api/quizzes/${quiz.quizId}/sessions`);
      expect(post.status).toBe(504);

      const err = await svc.connect
        .listSessions({ quizId: quiz.quizId }, { headers: auth })
        .catch((e) => e);
      expect(ConnectError.from(err).code).toBe(Code.DeadlineExceeded);
      await expect(svc.grpc.listSessions({ quizId: quiz.quizId }, auth)).rejects.toMatchObject({
        code: 4,
      });
    });
    // The database is back: the same requests succeed.
    expect((await svc.rest(USER, "GET", `/quizzes/${quiz.quizId}/sessions`)).status).toBe(200);
  });

  it("honours a shorter client deadline (connect-timeout-ms) on the server", async () => {
    await withQuizzesLocked(async () => {
      // fetch has no deadline of its own: an early answer can only come from the server.
      const [res, ms] = await timed(
        fetch(`${svc.baseUrl}/practice.v1.PracticeSessionService/ListSessions`, {
          method: "POST",
          headers: {
            ...(await svc.auth(USER)),
            "content-type": "application/json",
            "connect-timeout-ms": "100",
          },
          body: JSON.stringify({ quizId: quiz.quizId }),
        }),
      );
      expect(res.status).toBe(504);
      expect(await res.json()).toMatchObject({ code: "deadline_exceeded" });
      expect(ms).toBeLessThan(REQUEST_TIMEOUT_MS - 100);
    });
  });
});

describe("size limits", () => {
  it("refuses a REST body over 64 KiB with 413 resource_exhausted, and an RPC message likewise", async () => {
    const body = JSON.stringify({ pad: "x".repeat(70 * 1024) });
    const rest = await svc.rest(USER, "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: { "content-type": "application/json" },
      body,
    });
    expect(rest.status).toBe(413);
    expect(await rest.json()).toMatchObject({ status: 413, code: "resource_exhausted" });

    const rpc = await fetch(`${svc.baseUrl}/practice.v1.PracticeSessionService/ListSessions`, {
      method: "POST",
      headers: { ...(await svc.auth(USER)), "content-type": "application/json" },
      body: JSON.stringify({ quizId: quiz.quizId, cursor: "x".repeat(70 * 1024) }),
    });
    expect(await rpc.json()).toMatchObject({ code: "resource_exhausted" });
  });

  it("refuses HTTP/1.1 headers over 16 KiB with 431 as problem+json", async () => {
    const res = await fetch(`${svc.baseUrl}/healthz`, { headers: { "x-pad": "x".repeat(20_000) } });
    expect(res.status).toBe(431);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(await res.json()).toEqual({
      type: "about:blank",
      title: "Request Header Fields Too Large",
      status: 431,
      detail: "the request line and headers are larger than 16 KiB",
      code: "resource_exhausted",
    });
    const ok = await fetch(`${svc.baseUrl}/healthz`, { headers: { "x-pad": "x".repeat(8_000) } });
    expect(ok.status).toBe(200);
  });

  it("refuses a 100 KB cursor over HTTP/1.1 with 431 as problem+json", async () => {
    const res = await svc.rest(
      USER,
      "GET",
      `/quizzes/${quiz.quizId}/sessions?cursor=${"c".repeat(100_000)}`,
    );
    expect(res.status).toBe(431);
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    expect(await res.json()).toMatchObject({ status: 431, code: "resource_exhausted" });
  });

  it("refuses an HTTP/2 header block over 16 KiB that reaches the gateway with 431 as problem+json", async () => {
    const token = await svc.token(USER);
    // Sent at once: Node's client refuses to send a block over the server's
    // advertised limit once its SETTINGS have arrived; before that, the block
    // reaches the server, as from a client that ignores the setting.
    const session = http2Connect(svc.baseUrl);
    try {
      const res = await new Promise<{ status: number; type: string; body: string }>(
        (resolve, reject) => {
          const req = session.request({
            ":path": `/quizzes/${quiz.quizId}/sessions?cursor=${"c".repeat(30_000)}`,
            authorization: `Bearer ${token}`,
          });
          let status = 0;
          let type = "";
          let body = "";
          req.on("response", (h) => {
            status = Number(h[":status"]);
            type = String(h["content-type"]);
          });
          req.setEncoding("utf8");
          req.on("data", (chunk) => {
            body += chunk;
          });
          req.on("end", () => resolve({ status, type, body }));
          req.on("error", reject);
          req.end();
        },
      );
      expect(res.status).toBe(431);
      expect(res.type).toMatch(/^application\/problem\+json/);
      expect(JSON.parse(res.body)).toMatchObject({ status: 431, code: "resource_exhausted" });
    } finally {
      session.destroy();
    }
  });

  it("advertises a 16 KiB header list to HTTP/2 clients and refuses a larger one", async () => {
    const session = http2Connect(svc.baseUrl);
    try {
      const settings = await new Promise<{ maxHeaderListSize?: number }>((resolve) =>
        session.once("remoteSettings", resolve),
      );
      expect(settings.maxHeaderListSize).toBe(16 * 1024);
      const outcome = await new Promise<string>((resolve) => {
        const req = session.request({ ":path": "/healthz", "x-pad": "x".repeat(20_000) });
        req.on("response", (h) => resolve(`status ${h[":status"]}`));
        req.on("error", (e) => resolve(`error ${(e as NodeJS.ErrnoException).code}`));
        req.on("close", () => resolve(`closed ${req.rstCode}`));
        req.end();
      });
      expect(outcome).not.toBe("status 200");
    } finally {
      session.destroy();
    }
  });
});
