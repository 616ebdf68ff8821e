import { create, toBinary } from "@bufbuild/protobuf";
import { DurationSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AnswerConflictSchema,
  ListSessionsResponseSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { timestamp } from "../../test/support/proto-arbitraries.js";
import { writerDifferential } from "../../test/support/writer-differential.js";
import { compileBinaryWriter } from "./proto-binary.js";
import { sessionToProto } from "./to-proto.js";

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString("hex");

const { expected, written, testResponses } = writerDifferential(
  (schema, message) => hex(toBinary(schema, message)),
  (schema) => {
    const write = compileBinaryWriter(schema);
    return (
      write &&
      ((message) => {
        const bytes = write(message);
        return bytes && hex(bytes);
      })
    );
  },
);

const session = (i: number) =>
  sessionToProto({
    id: `019a0000-0000-7000-8000-${String(i).padStart(12, "0")}`,
    quizId: String(1000 + i),
    startedAt: new Date(Date.UTC(2026, 4, 1, 10, 0, i, 123)),
    completedAt: i % 2 ? new Date(Date.UTC(2026, 4, 1, 11, 0, i)) : null,
    expiresAt: i % 2 ? null : new Date(Date.UTC(2026, 4, 8, 10, 0, i, 123)),
    totalQuestions: 3 + i,
    correctAnswers: i % 3,
    scorePercentage: i % 2 ? 100 - i : null,
    answeredQuestions: i % 4,
    mode: i % 3 ? "full" : "review",
  });

describe("compileBinaryWriter: protobuf-es's binary, byte for byte", () => {
  testResponses();

  it("a page of sessions as the service builds it is written here, not left to protobuf-es", () => {
    const page = create(ListSessionsResponseSchema, {
      sessions: Array.from({ length: 20 }, (_, i) => session(i)),
      nextCursor: "AbC-_9",
      hasMore: true,
    });
    const bytes = compileBinaryWriter(ListSessionsResponseSchema)?.(page);
    expect(bytes).toBeDefined();
    expect(Buffer.from(bytes as Uint8Array).toString("hex")).toBe(
      expected(ListSessionsResponseSchema, page),
    );
  });

  it("Timestamps: written where protobuf-es writes them as they are, left to it otherwise", () => {
    fc.assert(
      fc.property(timestamp, (ts) => {
        expect(written(TimestampSchema, ts)).toBe(expected(TimestampSchema, ts));
      }),
      { numRuns: 3000 },
    );
  });

  it("leaves to protobuf-es a message of another type, unknown fields, and other schemas", () => {
    const write = compileBinaryWriter(ListSessionsResponseSchema) as (m: object) => unknown;
    expect(write(create(AnswerConflictSchema, {}))).toBeUndefined();
    const unknown = create(ListSessionsResponseSchema, { hasMore: true });
    unknown.$unknown = [{ no: 99, wireType: 0, data: new Uint8Array([1]) }];
    expect(write(unknown)).toBeUndefined();
    expect(compileBinaryWriter(DurationSchema)).toBeUndefined();
  });
});
