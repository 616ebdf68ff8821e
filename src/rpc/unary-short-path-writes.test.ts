import type { AddressInfo } from "node:net";
import { createContextValues } from "@connectrpc/connect";
import { fastify } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import { createGrpcClient } from "../../test/support/grpc-client.js";
import { startCall } from "../edge/call.js";
import { Admission, admissionLimits } from "../ops/admission.js";
import { unaryShortPathConstraint, unaryShortPathRoutes } from "./unary-short-path.js";

// The short path writes a gRPC answer as Connect's handler would: a message
// over writeMaxBytes is resource_exhausted, and nothing is written over an
// answer already sent (the edge's deadline answer) or on a stream gone.

const TITLE = "t".repeat(200);

const admission = new Admission(admissionLimits(4, 8));

async function shortPathApp(options: { writeMaxBytes?: number; answeredFirst?: boolean }) {
  const errors: unknown[] = [];
  const served: string[] = [];
  const app = fastify({ http2: true });
  app.addConstraintStrategy(unaryShortPathConstraint as never);
  app.addHook("onError", async (_req, _reply, err) => {
    errors.push(err);
  });
  // The edge (edge/api-calls.ts): each call's deadline, answered early when it passes.
  app.decorateRequest("call", null);
  app.addHook("onRequest", async (req, reply) => {
    req.log = Object.assign(Object.create(req.log), { error: (o: unknown) => errors.push(o) });
    req.call = startCall(reply.raw, options.answeredFirst ? 80 : 10_000, admission, () => {
      reply.raw.writeHead(200, { "content-type": "application/grpc", "grpc-status": "4" });
      reply.raw.end();
    });
  });
  await app.register(unaryShortPathRoutes as never, {
    routes: (router: import("@connectrpc/connect").ConnectRouter) =>
      router.service(QuizService, {
        async getQuiz() {
          if (options.answeredFirst) await new Promise((r) => setTimeout(r, 300));
          return { quiz: { id: "1", studyGuideId: "1", title: TITLE } };
        },
      }),
    interceptors: [],
    contextValues: () => createContextValues(),
    connectOptions: { writeMaxBytes: options.writeMaxBytes },
    onServed: (by: string) => served.push(by),
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const { port } = app.server.address() as AddressInfo;
  const client = createGrpcClient(QuizService, `127.0.0.1:${port}`);
  return { app, client, errors, served };
}

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

describe("the short path's gRPC writes", () => {
  it("a message over writeMaxBytes is resource_exhausted, as Connect says it", async () => {
    const { app, client, served } = await shortPathApp({ writeMaxBytes: 64 });
    close = async () => {
      client.close();
      await app.close();
    };
    const err = await client.getQuiz({ quizId: "1" }).then(
      () => undefined,
      (e: { code: number; details: string }) => e,
    );
    expect(served).toEqual(["short path"]);
    expect(err?.code).toBe(8);
    expect(err?.details).toMatch(/^message size \d+ is larger than configured writeMaxBytes 64$/);
  });

  it("under the limit the answer is written", async () => {
    const { app, client } = await shortPathApp({ writeMaxBytes: 1024 });
    close = async () => {
      client.close();
      await app.close();
    };
    const res = (await client.getQuiz({ quizId: "1" })) as { quiz?: { title: string } };
    expect(res.quiz?.title).toBe(TITLE);
  });

  it("nothing is written over an answer already sent, and no error is raised", async () => {
    const { app, client, errors, served } = await shortPathApp({ answeredFirst: true });
    close = async () => {
      client.close();
      await app.close();
    };
    // The client hears the early answer (its code is the edge's business).
    await client.getQuiz({ quizId: "1" }).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 600));
    expect(served).toEqual(["short path"]);
    expect(errors).toEqual([]);
  });
});
