import { connect as connectHttp2, constants as h2 } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_BODY_BYTES } from "../../src/limits.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { openIdleConnections, rawExchange } from "../support/raw-http.js";
import { listVia, percentile, reportFigures, TRANSPORTS } from "../support/reliability.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
let port: number;
let token: string;

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db);
  port = Number(new URL(svc.baseUrl).port);
  token = await svc.token("limits");
});
afterAll(async () => {
  await svc?.close();
});

describe("oversized bodies", () => {
  it("refuses a REST body over 64 KiB with 413 problem+json, and Connect/gRPC messages with resource_exhausted", async () => {
    const big = JSON.stringify({ pad: "x".repeat(MAX_BODY_BYTES) });
    const res = await svc.rest("limits", "POST", `/quizzes/${quiz.quizId}/sessions`, {
      headers: { "content-type": "application/json" },
      body: big,
    });
    expect(res.status).toBe(413);
    expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await res.json()).toMatchObject({ status: 413, code: "resource_exhausted" });

    const headers = await svc.auth("limits");
    const huge = "q".repeat(MAX_BODY_BYTES + 1);
    for (const client of [svc.connect, svc.grpcWeb]) {
      const err = await client
        .listSessions({ quizId: quiz.quizId, cursor: huge }, { headers })
        .catch((e) => e);
      expect(ConnectError.from(err).code).toBe(Code.ResourceExhausted);
    }
    await expect(
      svc.grpc.listSessions({ quizId: quiz.quizId, cursor: huge }, headers),
    ).rejects.toMatchObject({
      code: Code.ResourceExhausted,
    });
  });

  it("answers 413 from the declared length alone, without waiting for a 10 MB body", async () => {
    const head = [
      `POST /quizzes/${quiz.quizId}/sessions HTTP/1.1`,
      "host: 127.0.0.1",
      `authorization: Bearer ${token}`,
      "content-type: application/json",
      "content-length: 10000000",
      "",
      '{"a":"',
    ].join("\r\n");
    const { response, ms } = await rawExchange(port, head, { untilIncludes: "}" });
    reportFigures("413 from content-length", { ms: Math.round(ms) });
    expect(response).toMatch(/^HTTP\/1\.1 413 /);
    expect(response).toMatch(/content-type: application\/problem\+json/i);
    expect(ms).toBeLessThan(2000);
  });
});

describe("oversized headers", () => {
  it("HTTP/1.1: refuses a 20 KiB header with 431 (Node's 16 KiB limit), then keeps serving", async () => {
    const head = `GET /quizzes/${quiz.quizId}/sessions HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${token}\r\nx-pad: ${"p".repeat(20 * 1024)}\r\n\r\n`;
    const { response, ms } = await rawExchange(port, head);
    reportFigures("431 on HTTP/1.1", { ms: Math.round(ms) });
    expect(response).toMatch(/^HTTP\/1\.1 431 /);
    expect(response).toMatch(/content-type: application\/problem\+json/i);
    expect((await listVia(svc, "rest", "limits", quiz.quizId)).code).toBe("ok");
  });

  it("HTTP/2: a 100 KiB header block is refused (REFUSED_STREAM) before the app, and the port keeps serving", async () => {
    const session = connectHttp2(svc.baseUrl);
    const request = (extra: Record<string, string>) =>
      new Promise<{ status?: number; error?: string }>((resolve) => {
        const stream = session.request({
          ":method": "GET",
          ":path": `/quizzes/${quiz.quizId}/sessions`,
          authorization: `Bearer ${token}`,
          ...extra,
        });
        let status: number | undefined;
        stream.on("response", (h) => {
          status = Number(h[h2.HTTP2_HEADER_STATUS]);
        });
        stream.on("error", (e) => resolve({ status, error: (e as Error).message }));
        stream.on("close", () =>
          resolve({ status, error: stream.rstCode ? `rst ${stream.rstCode}` : undefined }),
        );
        stream.resume();
        stream.end();
      });
    try {
      // Up to nghttp2's 64 KiB the head reaches the gateway, which answers 431
      // past the 16 KiB it advertises; beyond, HTTP/2 refuses the stream itself.
      const medium = await request({ "x-pad": "p".repeat(30 * 1024) });
      expect(medium.status).toBe(431);
      // A gRPC call gets a grpc-status it can read: trailers-only RESOURCE_EXHAUSTED.
      // On a connection of its own: Node's client sends an oversized head only
      // before it has the server's SETTINGS.
      const grpcSession = connectHttp2(svc.baseUrl);
      const grpcHead = await new Promise<Record<string, unknown>>((resolve) => {
        const stream = grpcSession.request({
          ":method": "POST",
          ":path": "/practice.v1.PracticeSessionService/ListSessions",
          "content-type": "application/grpc",
          te: "trailers",
          authorization: `Bearer ${token}`,
          "x-pad": "p".repeat(30 * 1024),
        });
        stream.on("error", () => {});
        stream.on("response", (h) => resolve(h));
        stream.on("close", () => resolve({}));
        stream.resume();
        stream.end(Buffer.from([0, 0, 0, 0, 0]));
      });
      grpcSession.destroy();
      expect(grpcHead[":status"]).toBe(200);
      expect(grpcHead["grpc-status"]).toBe(String(Code.ResourceExhausted));
      const big = await request({ "x-pad": "p".repeat(100 * 1024) });
      reportFigures("HTTP/2 30 KiB and 100 KiB headers", { medium, big });
      expect(big.error).toMatch(/REFUSED_STREAM/);
      expect(big.status === undefined || (big.status >= 400 && big.status < 500)).toBe(true);
      expect(big.status ?? big.error).toBeDefined();
      // The port still answers, on a new connection and on every transport.
      for (const transport of TRANSPORTS) {
        expect((await listVia(svc, transport, "limits", quiz.quizId)).code).toBe("ok");
      }
    } finally {
      session.destroy();
    }
  });
});

describe("idle connections", () => {
  it("1,000 idle TCP connections do not stop the service from answering every transport", async () => {
    const baseline = await timeCalls(8);
    const t0 = performance.now();
    const idle = await openIdleConnections(port, 1000);
    const openMs = Math.round(performance.now() - t0);
    try {
      const loaded = await timeCalls(8);
      reportFigures("1,000 idle connections", {
        openMs,
        baselineP50Ms: percentile(baseline, 50),
        withIdleP50Ms: percentile(loaded, 50),
        withIdleMaxMs: percentile(loaded, 100),
      });
      expect(Math.max(...loaded)).toBeLessThan(2000);
      expect(idle.filter((s) => s.destroyed)).toHaveLength(0);
    } finally {
      for (const s of idle) s.destroy();
    }
  });
});

/** Times `rounds` list calls on each transport, one after another. */
async function timeCalls(rounds: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < rounds; i++) {
    for (const transport of TRANSPORTS) {
      const outcome = await listVia(svc, transport, "limits", quiz.quizId);
      expect(outcome.code).toBe("ok");
      ms.push(outcome.ms);
    }
  }
  return ms;
}
