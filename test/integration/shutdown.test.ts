import { type ChildProcess, spawn } from "node:child_process";
import { Agent, request as http1Request } from "node:http";
import { connect as http2Connect } from "node:http2";
import { connect as netConnect } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflectionRequestSchema } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { signToken } from "../../src/auth/tokens.js";
import { createTestDatabase, type TestDatabase, testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { createGrpcClient } from "../support/grpc-client.js";
import { endStatus, grpcFrame } from "../support/h2-raw.js";
import { listeningPort, serviceEnv } from "../support/listening.js";
import { TEST_SECRET } from "../support/service.js";

let database: TestDatabase;
let quiz: QuizFixture;
let child: ChildProcess;
let port = 0;
const exited = { code: null as number | null, signal: null as string | null, at: 0 };
let exit: Promise<void>;

/** The real service (src/main.ts), as `npm start` runs it, on a fresh database and a free port. */
beforeAll(async () => {
  if (testStore() === "sqlite") return;
  database = await createTestDatabase();
  quiz = await insertQuiz(database.db);
  child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    env: serviceEnv({
      DATABASE_URL: database.url,
      SHUTDOWN_TIMEOUT_MS: "10000",
      NODE_ENV: "production",
    }),
    stdio: ["ignore", "pipe", "inherit"],
  });
  exit = new Promise((resolve) =>
    child.once("exit", (code, signal) => {
      Object.assign(exited, { code, signal, at: performance.now() });
      resolve();
    }),
  );
  port = await listeningPort(child).port;
  // Ready once its first background probe has answered, as an orchestrator would wait for.
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    await res.arrayBuffer();
    if (res.status === 200) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
});
afterAll(async () => {
  if (exited.at === 0) child?.kill("SIGKILL");
  await database?.drop();
});

const token = (sub: string) => signToken(TEST_SECRET, sub);

/** A Health/Watch stream over grpc-js: every status it got, and how it ended. */
function watchHealth() {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const seen: ServingStatus[] = [];
  const call = client.makeServerStreamRequest(
    "/grpc.health.v1.Health/Watch",
    (m: object) => Buffer.from(toBinary(HealthCheckRequestSchema, m as never)),
    (b: Buffer) => fromBinary(HealthCheckResponseSchema, b),
    create(HealthCheckRequestSchema, {}),
  );
  call.on("data", (m: HealthCheckResponse) => seen.push(m.status));
  // A non-OK end is also an 'error' event: its status is read below.
  call.on("error", () => {});
  const ended = new Promise<number>((resolve) => call.on("status", (s) => resolve(s.code)));
  return { seen, ended, close: () => client.close() };
}

/** Resolves with whether a new TCP connection to the port is accepted. */
function accepts(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

// The spawned service must share the test's database and its LOCK TABLES: MySQL.
describe.skipIf(testStore() === "sqlite")("graceful shutdown on SIGTERM", () => {
  it("stops accepting, reports NOT_SERVING, finishes every in-flight request, and exits 0", async () => {
    const base = `http://127.0.0.1:${port}`;
    const path = `/quizzes/${quiz.quizId}/sessions`;
    const watcher = watchHealth();
    // A reflection conversation left open: it must not hold the drain.
    const reflectionSession = http2Connect(base);
    const reflection = reflectionSession.request({
      ":method": "POST",
      ":path": "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
      "content-type": "application/grpc",
      te: "trailers",
    });
    reflection.on("error", () => {});
    reflection.write(
      grpcFrame(
        toBinary(
          ServerReflectionRequestSchema,
          create(ServerReflectionRequestSchema, {
            messageRequest: { case: "listServices", value: "" },
          }),
        ),
      ),
    );
    const reflectionEnded = endStatus(reflection);
    await new Promise<void>((resolve) => reflection.once("data", () => resolve()));
    // Idle keep-alive connections, HTTP/1.1 and HTTP/2, that must not hold the exit up.
    const agent = new Agent({ keepAlive: true });
    await new Promise<void>((resolve, reject) =>
      http1Request(`${base}/healthz`, { agent }, (res) => res.resume().on("end", resolve))
        .on("error", reject)
        .end(),
    );
    const idleH2 = http2Connect(base);
    await new Promise<void>((resolve) => idleH2.once("remoteSettings", () => resolve()));
    const connect = createClient(
      PracticeSessionService,
      createConnectTransport({ baseUrl: base, httpVersion: "2" }),
    );
    const grpcClient = createGrpcClient(PracticeSessionService, `127.0.0.1:${port}`);

    const locker = await createConnection({ uri: database.url });
    await locker.query("LOCK TABLES quizzes WRITE");
    let inFlight: Promise<unknown[]>;
    try {
      // Each waits on the locked table: in flight when SIGTERM comes.
      inFlight = Promise.all([
        ...["a", "b", "c"].map(async (u) =>
          fetch(`${base}${path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${await token(`rest-${u}`)}` },
          }).then((r) => r.status),
        ),
        connect
          .startSession(
            { quizId: quiz.quizId },
            { headers: { authorization: `Bearer ${await token("connect")}` } },
          )
          .then((r) => (r.created ? "created" : "resumed")),
        grpcClient
          .startSession({ quizId: quiz.quizId }, { authorization: `Bearer ${await token("grpc")}` })
          .then((r) => (r.created ? "created" : "resumed")),
      ]);
      await new Promise((r) => setTimeout(r, 500));
      expect(child.kill("SIGTERM")).toBe(true);

      // Draining: health watchers hear NOT_SERVING, then their stream ends at once (unavailable).
      expect(await watcher.ended).toBe(grpc.status.UNAVAILABLE);
      expect(await reflectionEnded).toBe(grpc.status.UNAVAILABLE);
      expect(watcher.seen).toEqual([ServingStatus.SERVING, ServingStatus.NOT_SERVING]);
      expect(await accepts()).toBe(false);
      expect(exited.at).toBe(0); // still finishing the requests
    } finally {
      await locker.query("UNLOCK TABLES");
      await locker.end();
    }
    const unlockedAt = performance.now();

    expect(await inFlight).toEqual([201, 201, 201, "created", "created"]);
    await exit;
    expect(exited).toMatchObject({ code: 0, signal: null });
    // Far below SHUTDOWN_TIMEOUT_MS: idle connections were closed, not waited for.
    expect(exited.at - unlockedAt).toBeLessThan(3000);
    expect(idleH2.closed || idleH2.destroyed).toBe(true);

    watcher.close();
    grpcClient.close();
    agent.destroy();
    idleH2.destroy();
    reflectionSession.destroy();
    // The requests' work was done, not just answered.
    const row = await database.db
      .selectFrom("practice_sessions")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    expect(Number(row.n)).toBe(5);
  }, 30_000);
});
