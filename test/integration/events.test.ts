import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SessionJson } from "../../src/rest/schemas.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * The transactional outbox, on each store: every committed change writes
 * exactly its events, with their payloads, in order per session; a refused
 * or rolled-back change writes none. (Publishing: relay.test.ts.)
 */

let svc: TestService;
let quiz: QuizFixture;
let userCounter = 0;
const newUser = () => `ev-${++userCounter}`;

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db, { questions: 4 });
});
afterAll(async () => {
  await svc?.close();
});

interface Event {
  specversion: string;
  id: string;
  source: string;
  type: string;
  subject: string;
  time: string;
  datacontenttype: string;
  data: Record<string, unknown>;
}

/** The outbox's events about `sessionId`, in outbox order. */
async function eventsOf(sessionId: string): Promise<Event[]> {
  const rows = await svc.db
    .selectFrom("practice_outbox")
    .select(["seq", "body", "event_id", "type", "session_id"])
    .where("session_id", "=", sessionId)
    .execute();
  rows.sort((a, b) => Number(a.seq) - Number(b.seq));
  return rows.map((r) => {
    const event = JSON.parse(r.body) as Event;
    expect([event.id, event.type, event.subject]).toEqual([r.event_id, r.type, r.session_id]);
    return { ...event, data: withIsoTimes(event.data) };
  });
}

/**
 * Payload times are protobuf JSON Timestamps: RFC 3339 with 0, 3, 6 or 9
 * fractional digits ("…:36Z" on a whole second). Compared as ISO strings with
 * milliseconds, like the REST API's.
 */
function withIsoTimes(data: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(data)) {
    out[key] = key.endsWith("_at") ? new Date(String(value)).toISOString() : value;
  }
  return out;
}

async function outboxSize(): Promise<number> {
  const { rows } = await sql<{ n: number }>`SELECT COUNT(*) AS n FROM practice_outbox`.execute(
    svc.db,
  );
  return Number(rows[0]?.n);
}

async function post(user: string, path: string, body?: unknown) {
  const init: RequestInit =
    body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } };
  const res = await svc.rest(user, "POST", path, init);
  return { status: res.status, body: (await res.json()) as SessionJson };
}
const start = (user: string) => post(user, `/quizzes/${quiz.quizId}/sessions`);
const answer = (user: string, sessionId: string, questionIndex: number, text: string) =>
  post(user, `/sessions/${sessionId}/answers`, {
    question_id: quiz.questionIds[questionIndex],
    user_answer: text,
  });

describe("the outbox", () => {
  it("gets one event per committed change, in order, with its payload", async () => {
    const user = newUser();
    const started = await start(user);
    expect(started.status).toBe(201);
    const id = started.body.id;
    expect((await start(user)).status).toBe(200); // a resume: no event
    expect((await answer(user, id, 0, " a1 ")).status).toBe(201); // correct
    expect((await answer(user, id, 1, "wrong")).status).toBe(201);
    expect((await answer(user, id, 1, "A2")).status).toBe(409); // refused: no event
    expect((await answer(user, id, 1, "wrong")).status).toBe(200); // a retry: no event
    expect((await post(user, `/sessions/${id}/complete`)).status).toBe(200);
    expect((await post(user, `/sessions/${id}/complete`)).status).toBe(200); // a retry: no event
    expect((await answer(user, id, 1, "wrong")).status).toBe(200); // a retry: no event

    const events = await eventsOf(id);
    expect(events.map((e) => e.type)).toEqual([
      "practice.session.started",
      "practice.answer.submitted",
      "practice.answer.submitted",
      "practice.session.completed",
    ]);
    for (const e of events) {
      expect(e).toMatchObject({
        specversion: "1.0",
        source: "/practice-sessions",
        subject: id,
        datacontenttype: "application/json",
      });
      expect(e.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
      expect(new Date(e.time).toISOString()).toBe(e.time);
    }
    expect(new Set(events.map((e) => e.id)).size).toBe(4);
    const [s, a1, a2, c] = events.map((e) => e.data);
    const common = { session_id: id, user_id: user, quiz_id: quiz.quizId };
    expect(s).toEqual({
      ...common,
      started_at: started.body.started_at,
      total_questions: 4,
      mode: "full",
    });
    expect(a1).toEqual({
      ...common,
      question_id: quiz.questionIds[0],
      is_correct: true,
      answered_at: expect.any(String),
      correct_answers: 1,
      total_questions: 4,
      answered_questions: 1,
    });
    expect(a2).toMatchObject({ question_id: quiz.questionIds[1], is_correct: false });
    expect(a2?.correct_answers).toBe(1);
    expect(c).toEqual({
      ...common,
      started_at: started.body.started_at,
      completed_at: events[3]?.time,
      total_questions: 4,
      correct_answers: 1,
      score_percentage: 25,
      mode: "full",
    });
    // No answer text, no correct answer, no token in any event.
    const all = JSON.stringify(events);
    for (const secret of ["wrong", " a1 ", "A1", "A2", "Bearer"]) expect(all).not.toContain(secret);
  });

  it("gets expired, then started, when a start replaces a stale session", async () => {
    const user = newUser();
    const old = (await start(user)).body;
    await answer(user, old.id, 2, "A3");
    svc.clock.advance(8 * 86_400_000);
    try {
      const fresh = await start(user);
      expect(fresh.status).toBe(201);
      const expired = await eventsOf(old.id);
      expect(expired.map((e) => e.type)).toEqual([
        "practice.session.started",
        "practice.answer.submitted",
        "practice.session.expired",
      ]);
      expect(expired[2]?.data).toEqual({
        session_id: old.id,
        user_id: user,
        quiz_id: quiz.quizId,
        started_at: old.started_at,
        expired_at: svc.clock.now().toISOString(),
        total_questions: 4,
        answered_questions: 1,
        correct_answers: 1,
      });
      expect((await eventsOf(fresh.body.id)).map((e) => e.type)).toEqual([
        "practice.session.started",
      ]);
    } finally {
      svc.clock.advance(-8 * 86_400_000);
    }
  });

  it("gets nothing from a refused start", async () => {
    const empty = await insertQuiz(svc.db, { questions: 0 });
    const before = await outboxSize();
    const res = await svc.rest(newUser(), "POST", `/quizzes/${empty.quizId}/sessions`);
    expect(res.status).toBe(400);
    expect(await outboxSize()).toBe(before);
  });

  it("keeps neither the change nor its event when the transaction rolls back", async () => {
    const user = newUser();
    const { id } = (await start(user)).body;
    // The completion's event cannot be written: its transaction must roll back whole.
    await failInsertsOf("practice.session.completed");
    try {
      const res = await svc.rest(user, "POST", `/sessions/${id}/complete`);
      expect(res.status).toBe(500);
    } finally {
      await dropTrigger();
    }
    const session = await svc.db
      .selectFrom("practice_sessions")
      .select("completed_at")
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    expect(session.completed_at).toBeNull();
    expect((await eventsOf(id)).map((e) => e.type)).toEqual(["practice.session.started"]);
    // And once the outbox takes rows again, the same completion commits with its event.
    expect((await svc.rest(user, "POST", `/sessions/${id}/complete`)).status).toBe(200);
    expect((await eventsOf(id)).map((e) => e.type)).toEqual([
      "practice.session.started",
      "practice.session.completed",
    ]);
  });

  it("keeps neither a start nor its event when two starts race: the loser writes nothing", async () => {
    const user = newUser();
    const before = await outboxSize();
    const results = await Promise.all(Array.from({ length: 6 }, () => start(user)));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(await outboxSize()).toBe(before + 1);
  });
});

/** A trigger that makes inserting an outbox row of `type` fail. */
async function failInsertsOf(type: string): Promise<void> {
  if (svc.database.store === "mysql") {
    await sql
      .raw(`CREATE TRIGGER outbox_refuses BEFORE INSERT ON practice_outbox FOR EACH ROW
        BEGIN
          IF NEW.type = '${type}' THEN
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'outbox refuses';
          END IF;
        END`)
      .execute(svc.db);
  } else {
    await sql
      .raw(`CREATE TRIGGER outbox_refuses BEFORE INSERT ON practice_outbox
        WHEN NEW.type = '${type}'
        BEGIN SELECT RAISE(ABORT, 'outbox refuses'); END`)
      .execute(svc.db);
  }
}

async function dropTrigger(): Promise<void> {
  await sql.raw("DROP TRIGGER IF EXISTS outbox_refuses").execute(svc.db);
}
