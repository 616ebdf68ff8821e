/**
 * `npm run bench:encode`: CPU per encode of the two hot responses (a page
 * of 20 sessions, a resume with 5 answers and 10 questions) with protobuf-es
 * (`toBinary`; `toJsonString` + UTF-8, as Connect serializes) against the
 * hand-written encoders (src/rpc/session-binary.ts, session-json.ts). A few
 * seconds, in process.
 */
import { randomUUID } from "node:crypto";
import { create, type DescMessage, type Message, toBinary, toJsonString } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AnswerSchema,
  ListSessionsResponseSchema,
  PracticeSessionSchema,
  SnapshotQuestionSchema,
  StartSessionResponseSchema,
} from "../gen/practice/v1/practice_session_service_pb.js";
import { binaryEncoderFor } from "../src/rpc/session-binary.js";
import { jsonEncoderFor } from "../src/rpc/session-json.js";

const quizId = randomUUID();
const at = (i: number) => timestampFromDate(new Date(Date.UTC(2026, 0, 1) + i * 60_123));
const page = create(ListSessionsResponseSchema, {
  sessions: Array.from({ length: 20 }, (_, i) =>
    create(PracticeSessionSchema, {
      id: randomUUID(),
      quizId,
      startedAt: at(i),
      completedAt: at(i + 1),
      totalQuestions: 10,
      correctAnswers: 7,
      scorePercentage: 70,
      answeredQuestions: 10,
    }),
  ),
  nextCursor: Buffer.from(randomUUID()).toString("base64url"),
  hasMore: true,
});
const resume = create(StartSessionResponseSchema, {
  session: create(PracticeSessionSchema, {
    id: randomUUID(),
    quizId,
    startedAt: at(0),
    totalQuestions: 10,
    correctAnswers: 3,
    answeredQuestions: 5,
    expiresAt: at(100),
    answers: Array.from({ length: 5 }, (_, i) =>
      create(AnswerSchema, {
        questionId: randomUUID(),
        userAnswer: `answer ${i}`,
        isCorrect: i % 2 === 0,
        answeredAt: at(i),
      }),
    ),
  }),
  questions: Array.from({ length: 10 }, (_, i) =>
    create(SnapshotQuestionSchema, { position: i + 1, questionId: randomUUID() }),
  ),
});

function time(label: string, fn: () => unknown): number {
  for (let i = 0; i < 2000; i++) fn();
  const n = 20000;
  const t0 = process.cpuUsage();
  for (let i = 0; i < n; i++) fn();
  const d = process.cpuUsage(t0);
  const us = (d.user + d.system) / n;
  console.log(`${label.padEnd(44)} ${us.toFixed(2).padStart(7)} µs`);
  return us;
}

const encoder = new TextEncoder();
for (const [name, schema, message] of [
  ["page of 20", ListSessionsResponseSchema, page],
  ["resume", StartSessionResponseSchema, resume],
] as [string, DescMessage, Message][]) {
  const bin = binaryEncoderFor(schema);
  const json = jsonEncoderFor(schema);
  if (!bin || !json) throw new Error("no encoder");
  const a = time(`${name}: toBinary`, () => toBinary(schema, message));
  const b = time(`${name}: hand-written binary`, () => bin(message, 5));
  const c = time(`${name}: toJsonString + TextEncoder`, () =>
    encoder.encode(toJsonString(schema, message)),
  );
  const d = time(`${name}: hand-written JSON + Buffer.from`, () => Buffer.from(json(message)));
  console.log(`${name}: binary ${(a / b).toFixed(1)}x, JSON ${(c / d).toFixed(1)}x faster`);
}
