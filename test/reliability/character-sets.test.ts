import { randomBytes } from "node:crypto";
import { createConnection } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dropDatabase, openDatabase } from "../../src/db/connect.js";
import type { NatsTarget } from "../../src/events/nats.js";
import type { OutboxRelay } from "../../src/events/relay.js";
import { testServerUrl, testStore } from "../support/database.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import {
  deleteStream,
  eventually,
  requireNats,
  streamMessages,
  testRelay,
  uniqueTarget,
} from "../support/nats.js";
import { startTestService, type TestService } from "../support/service.js";
import { startServiceOn } from "../support/service-start.js";
import { defaultDatabaseLimits } from "../support/settings.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { startThrowawayServers, throwawayUnavailable } from "../support/throwaway-mariadb.js";

// A server set up as many old installs are (utf8mb3, the client's requested charset ignored,
// or an init_connect that sets it) sends results in utf8mb3: a 4-byte character reads as `?`.
// The service pins each session to utf8mb4 and checks it, so every text reads back as written;
// where the pin does not hold (a proxy that rewrites it), it refuses the connection, and the
// start, in one line.

const PORT = 13441;

/** Two learners whose ids differ only in a 4-byte character, and what each answers. */
const LEARNERS = [
  { sub: "😀learner-ü", answer: "my answer 😀 𝄞 ∑ é", transport: "rest" },
  { sub: "🙂learner-ü", answer: "🙂 ünïcödé 中文 ✓", transport: "grpc" },
] as const;

const unavailable = testStore() === "mysql" ? throwawayUnavailable() : "the MySQL run only";

describe.skipIf(unavailable !== undefined)("a server that forces a 3-byte character set", () => {
  let serverUrl: string;
  let stopServers: () => Promise<void>;
  let nats: boolean;
  const savedUrl = process.env.TEST_DATABASE_URL;

  beforeAll(async () => {
    const { servers, stop } = await startThrowawayServers([
      {
        name: "charset",
        port: PORT,
        options: {
          "character-set-server": "utf8mb3",
          "collation-server": "utf8mb3_general_ci",
          "character-set-client-handshake": "OFF",
        },
      },
    ]);
    stopServers = stop;
    serverUrl = (servers[0] as { url: string }).url;
    // An account init_connect applies to (no SUPER, no CONNECTION ADMIN), set to utf8mb3 there.
    const root = await createConnection({ uri: serverUrl });
    await root.query("SET GLOBAL init_connect = 'SET NAMES utf8'");
    await root.query("CREATE USER 'plain'@'%' IDENTIFIED BY 'plain'");
    await root.query("GRANT ALL ON *.* TO 'plain'@'%'");
    await root.query("REVOKE SUPER, CONNECTION ADMIN ON *.* FROM 'plain'@'%'");
    await root.end();
    nats = await requireNats();
  }, 120_000);

  afterAll(async () => {
    if (savedUrl === undefined) delete process.env.TEST_DATABASE_URL;
    else process.env.TEST_DATABASE_URL = savedUrl;
    await stopServers?.();
  });

  it("the server does force it: a connection that sets nothing reads a 4-byte character as ?", async () => {
    for (const account of ["root", "plain:plain"]) {
      const c = await createConnection({ uri: serverUrl.replace("root", account) });
      try {
        const [rows] = await c.query(
          "SELECT @@character_set_results AS results, _utf8mb4 X'f09f9880' AS text",
        );
        expect(rows).toEqual([{ results: "utf8mb3", text: "?" }]);
      } finally {
        await c.end();
      }
    }
  });

  for (const [account, why] of [
    ["root", "the client's character set ignored (character-set-client-handshake=OFF)"],
    ["plain:plain", "an account init_connect sets to utf8"],
  ] as const) {
    describe(why, () => {
      let svc: TestService;
      let quiz: QuizFixture;
      let target: NatsTarget;
      let relay: OutboxRelay | undefined;

      beforeAll(async () => {
        process.env.TEST_DATABASE_URL = serverUrl.replace("root", account);
        svc = await startTestService();
        quiz = await insertQuiz(svc.db, { questions: 2 });
        target = uniqueTarget();
        if (nats) {
          relay = testRelay(svc.db, target);
          relay.start();
        }
      }, 60_000);

      afterAll(async () => {
        await relay?.stop();
        if (nats) await deleteStream(target);
        await svc?.close();
      });

      it("every read over REST and gRPC, and every event, carries each text as written", async () => {
        const sessions: string[] = [];
        for (const { sub, answer, transport } of LEARNERS) {
          const start = await svc.rest(sub, "POST", `/quizzes/${quiz.quizId}/sessions`);
          expect(start.status).toBe(201);
          const sessionId = ((await start.json()) as { id: string }).id;
          sessions.push(sessionId);
          const questionId = quiz.questionIds[0] as string;
          if (transport === "rest") {
            const res = await svc.rest(sub, "POST", `/sessions/${sessionId}/answers`, {
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ question_id: questionId, user_answer: answer }),
            });
            expect(res.status).toBe(201);
          } else {
            await svc.grpc.submitAnswer(
              { sessionId, questionId, userAnswer: answer },
              await svc.auth(sub),
            );
          }
        }
        for (const [i, { sub, answer }] of LEARNERS.entries()) {
          const sessionId = sessions[i] as string;
          const rest = await svc.rest(sub, "GET", `/sessions/${sessionId}`);
          const body = (await rest.json()) as { answers: { user_answer: string }[] };
          expect(body.answers.map((a) => a.user_answer)).toEqual([answer]);
          const grpc = await svc.grpc.getSession({ sessionId }, await svc.auth(sub));
          expect(grpc.session?.answers.map((a) => a.userAnswer)).toEqual([answer]);
          // Each learner's list holds their own session only.
          const list = await svc.rest(sub, "GET", `/quizzes/${quiz.quizId}/sessions`);
          const page = (await list.json()) as { sessions: { id: string }[] };
          expect(page.sessions.map((s) => s.id)).toEqual([sessionId]);
          // The same answer again is a retry (compared with what was read back)...
          const again = await svc.rest(sub, "POST", `/sessions/${sessionId}/answers`, {
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ question_id: quiz.questionIds[0], user_answer: answer }),
          });
          expect(again.status).toBe(200);
          // ...and another one is refused with the stored answer as it was written.
          const other = await svc.rest(sub, "POST", `/sessions/${sessionId}/answers`, {
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ question_id: quiz.questionIds[0], user_answer: "other" }),
          });
          expect(other.status).toBe(409);
          const conflict = (await other.json()) as { stored_answer: { user_answer: string } };
          expect(conflict.stored_answer.user_answer).toBe(answer);
        }
        // The bytes stored are each subject's UTF-8.
        const c = await createConnection({ uri: svc.database.url });
        try {
          const [rows] = await c.query(
            "SELECT HEX(user_id) AS id FROM practice_sessions ORDER BY started_at, id",
          );
          expect((rows as { id: string }[]).map((r) => r.id).sort()).toEqual(
            LEARNERS.map((l) => Buffer.from(l.sub).toString("hex").toUpperCase()).sort(),
          );
        } finally {
          await c.end();
        }
        if (!nats) return;
        // The relay reads each event back before publishing it.
        await eventually(
          async () => (await streamMessages(target)).length >= 4,
          15_000,
          "the events of two starts and two answers",
        );
        const events = await streamMessages(target);
        const bySession = new Map<string, Set<unknown>>();
        for (const m of events) {
          const users = bySession.get(m.event.subject) ?? new Set();
          users.add(m.event.data.user_id);
          bySession.set(m.event.subject, users);
        }
        expect(sessions.map((id) => [...(bySession.get(id) ?? [])])).toEqual(
          LEARNERS.map((l) => [l.sub]),
        );
      });
    });
  }
});

describe.skipIf(testStore() !== "mysql")("a session whose character set does not hold", () => {
  let proxy: TcpProxy;
  let url: string;
  const database = `practice_test_${randomBytes(6).toString("hex")}`;

  beforeAll(async () => {
    const server = new URL(testServerUrl());
    proxy = new TcpProxy(server.hostname, Number(server.port || 3306));
    await proxy.start();
    // A proxy that forces utf8mb3 on every session, whatever the client asks.
    proxy.replaceOn("SET NAMES utf8mb4", "SET NAMES utf8mb3");
    url = `mysql://root@127.0.0.1:${proxy.port}/${database}`;
  });

  afterAll(async () => {
    await proxy?.cut();
    // Nothing should have made it; a start that got that far would have.
    await dropDatabase(new URL(`/${database}`, testServerUrl()).toString());
  });

  it("is refused: the connection is not used, and the reason names the setting", async () => {
    // A database that exists: the connection itself is what is refused.
    const existing = new URL("/mysql", url).toString();
    const handle = openDatabase({
      url: existing,
      poolSize: 1,
      connectTimeoutMs: 2000,
      limits: defaultDatabaseLimits(),
    });
    try {
      const failed = await handle.db
        .selectNoFrom((eb) => eb.val(1).as("one"))
        .execute()
        .then(
          () => undefined,
          (err: Error) => err.message,
        );
      expect(failed).toMatch(/^database session not ready: .*character_set_\w+ utf8mb3/);
      expect(failed).toMatch(/utf8mb4/);
    } finally {
      await handle.close();
    }
  });

  it("stops the service's start before its port opens, in one line naming the setting", async () => {
    const run = await startServiceOn(url);
    expect(run.errorLines, run.stderr).toHaveLength(1);
    expect(run.errorLines[0]).toMatch(/character_set_\w+ utf8mb3/);
    expect(run.errorLines[0]).toMatch(/character-set-server=utf8mb4/);
    expect(run.code).toBe(1);
  }, 120_000);
});
