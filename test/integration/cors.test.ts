import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
const APP = "https://app.example.com";
const USER = "browser-user";

beforeAll(async () => {
  svc = await startTestService({ corsOrigins: [APP, "http://localhost:5173"] });
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

const list = (headers: string | null) => (headers ?? "").toLowerCase().split(/\s*,\s*/);

describe("CORS for browsers (CORS_ORIGINS)", () => {
  it("answers a Connect preflight from an allowed origin with Connect's headers and authorization", async () => {
    const res = await fetch(`${svc.baseUrl}/practice.v1.PracticeSessionService/ListSessions`, {
      method: "OPTIONS",
      headers: {
        origin: APP,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,connect-protocol-version",
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe(APP);
    expect(list(res.headers.get("access-control-allow-methods"))).toEqual(
      expect.arrayContaining(["get", "post"]),
    );
    expect(list(res.headers.get("access-control-allow-headers"))).toEqual(
      expect.arrayContaining([
        "authorization",
        "content-type",
        "connect-protocol-version",
        "connect-timeout-ms",
        "x-grpc-web",
        "grpc-timeout",
        // W3C Trace Context: the page's calls join its trace.
        "traceparent",
        "tracestate",
      ]),
    );
  });

  it("lets an allowed origin read Connect and gRPC-Web responses, and REST's location and x-request-id", async () => {
    const auth = await svc.auth(USER);
    const connect = await fetch(`${svc.baseUrl}/practice.v1.PracticeSessionService/ListSessions`, {
      method: "POST",
      headers: { ...auth, origin: APP, "content-type": "application/json" },
      body: JSON.stringify({ quizId: quiz.quizId }),
    });
    expect(connect.status).toBe(200);
    expect(connect.headers.get("access-control-allow-origin")).toBe(APP);
    expect(list(connect.headers.get("access-control-expose-headers"))).toEqual(
      expect.arrayContaining(["grpc-status", "grpc-message", "x-request-id"]),
    );

    const rest = await fetch(`${svc.baseUrl}/quizzes/${quiz.quizId}/sessions`, {
      method: "POST",
      headers: { ...auth, origin: "http://localhost:5173" },
    });
    expect(rest.status).toBe(201);
    expect(rest.headers.get("access-control-allow-origin")).toBe("http://localhost:5173");
    expect(list(rest.headers.get("access-control-expose-headers"))).toEqual(
      expect.arrayContaining(["location", "x-request-id"]),
    );
    // A REST preflight needs no token either.
    const preflight = await fetch(`${svc.baseUrl}/api/quizzes/${quiz.quizId}/sessions`, {
      method: "OPTIONS",
      headers: {
        origin: APP,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(APP);
  });

  it("gives another origin no CORS headers, so its browser refuses the response", async () => {
    const res = await fetch(`${svc.baseUrl}/quizzes/${quiz.quizId}/sessions`, {
      headers: { ...(await svc.auth(USER)), origin: "https://evil.example" },
    });
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    const preflight = await fetch(
      `${svc.baseUrl}/practice.v1.PracticeSessionService/ListSessions`,
      {
        method: "OPTIONS",
        headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
      },
    );
    expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
  });
});
