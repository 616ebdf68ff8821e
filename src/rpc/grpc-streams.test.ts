import { constants, createServer, type Http2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import { createGrpcClient } from "../../test/support/grpc-client.js";
import { admissionConfig } from "../config.js";
import { Admission } from "../ops/admission.js";
import { Metrics } from "../ops/metrics.js";
import { RefusalPace } from "../ops/refusal-pace.js";
import { RequestLog } from "../ops/request-log.js";
import { grpcStreams } from "./grpc-streams.js";
import { outcomeInterceptor } from "./outcome-interceptor.js";
import type { ServedBy } from "./short-path-call.js";

// The stream path's gRPC writes (grpc-streams.ts), on a bare HTTP/2 server:
// a message over writeMaxBytes is resource_exhausted as Connect says it, one
// under it is written, and nothing is written on a stream its client has
// reset, nor any error raised.

const TITLE = "t".repeat(200);

async function streamServer(options: { writeMaxBytes?: number; slowMs?: number }) {
  const served: ServedBy[] = [];
  const logged: unknown[] = [];
  const logger = pino(
    { level: "info" },
    { write: (line: string) => logged.push(JSON.parse(line)) },
  );
  const path = grpcStreams({
    routes: (router) =>
      router.service(QuizService, {
        async getQuiz() {
          if (options.slowMs) await new Promise((r) => setTimeout(r, options.slowMs));
          return { quiz: { id: "1", studyGuideId: "1", title: TITLE } };
        },
      }),
    // Outermost, as the service runs them: it reports how each call ended.
    interceptors: [outcomeInterceptor()],
    connectOptions: { writeMaxBytes: options.writeMaxBytes },
    door: {
      authenticator: { authenticate: async () => "alice" },
      admission: new Admission({ ...admissionConfig({}, 4), maxQueuedPerUser: 8 }),
      requestTimeoutMs: 10_000,
      pace: new RefusalPace(),
    },
    requestLog: new RequestLog(logger, new Metrics()),
    logger,
    tracing: false,
    trustProxy: false,
    onServed: (by) => served.push(by),
  });
  const server: Http2Server = createServer();
  server.on("stream", (stream, headers, _flags, rawHeaders) => {
    if (!path.take(stream, headers, rawHeaders))
      stream.respond({ ":status": 404 }, { endStream: true });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const client = createGrpcClient(QuizService, `127.0.0.1:${port}`);
  close = async () => {
    client.close();
    await new Promise((resolve) => server.close(resolve));
  };
  return { client, served, logged, port };
}

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

describe("the stream path's gRPC writes", () => {
  it("a message over writeMaxBytes is resource_exhausted, as Connect says it", async () => {
    const { client, served } = await streamServer({ writeMaxBytes: 64 });
    const err = await client.getQuiz({ quizId: "1" }).then(
      () => undefined,
      (e: { code: number; details: string }) => e,
    );
    expect(served).toEqual(["grpc stream"]);
    expect(err?.code).toBe(8);
    expect(err?.details).toMatch(/^message size \d+ is larger than configured writeMaxBytes 64$/);
  });

  it("under the limit the answer is written, and the call is logged once with its request id", async () => {
    const { client, logged } = await streamServer({ writeMaxBytes: 1024 });
    const res = (await client.getQuiz({ quizId: "1" })) as { quiz?: { title: string } };
    expect(res.quiz?.title).toBe(TITLE);
    await new Promise((r) => setTimeout(r, 50));
    const lines = logged.filter((l) => (l as { msg?: string }).msg === "request");
    expect(lines).toEqual([
      expect.objectContaining({
        reqId: expect.any(String),
        transport: "grpc",
        procedure: "/practice.v1.QuizService/GetQuiz",
        code: "ok",
        status: 200,
      }),
    ]);
  });

  it("nothing is written on a stream its client reset, no error is raised, and the call counts as canceled", async () => {
    const { port, served, logged } = await streamServer({ slowMs: 300 });
    const { connect } = await import("node:http2");
    const session = connect(`http://127.0.0.1:${port}`);
    const stream = session.request({
      ":method": "POST",
      ":path": "/practice.v1.QuizService/GetQuiz",
      "content-type": "application/grpc",
    });
    stream.on("error", () => {});
    stream.end(Buffer.from([0, 0, 0, 0, 0]));
    await new Promise((r) => setTimeout(r, 50));
    stream.close(constants.NGHTTP2_CANCEL);
    await new Promise((r) => setTimeout(r, 600));
    session.destroy();
    expect(served).toEqual(["grpc stream"]);
    expect(logged.filter((l) => (l as { level: number }).level >= 50)).toEqual([]);
    expect(logged).toContainEqual(expect.objectContaining({ code: "canceled", status: 499 }));
  });
});
