import { create, toJsonString } from "@bufbuild/protobuf";
import { DurationSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AnswerConflictSchema,
  ListSessionsRequestSchema,
  ListSessionsResponseSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { MAX_SECONDS, MIN_SECONDS, timestamp } from "../../test/support/proto-arbitraries.js";
import { writerDifferential } from "../../test/support/writer-differential.js";
import { compileJsonWriter } from "./proto-json.js";
import { STRICT_JSON_OPTIONS } from "./strict-json.js";
import { sessionToProto } from "./to-proto.js";

const { expected, written, testResponses } = writerDifferential(
  (schema, message) => toJsonString(schema, message, STRICT_JSON_OPTIONS as object),
  (schema) => compileJsonWriter(schema, STRICT_JSON_OPTIONS),
);

describe("compileJsonWriter: protobuf-es's JSON, byte for byte", () => {
  testResponses();

  it("Timestamps across the whole range, to the nanosecond; outside it, protobuf-es's error", () => {
    const write = compileJsonWriter(TimestampSchema) as (m: object) => string | undefined;
    fc.assert(
      fc.property(timestamp, (ts) => {
        const out = write(ts);
        const inRange = ts.seconds >= MIN_SECONDS && ts.seconds <= MAX_SECONDS;
        const validNanos = ts.nanos >= 0 && ts.nanos <= 999_999_999;
        if (inRange && validNanos) expect(out).toBe(expected(TimestampSchema, ts));
        else expect(out).toBeUndefined();
      }),
      { numRuns: 5000 },
    );
    for (const iso of [
      "0001-01-01T00:00:00Z",
      "1900-02-28T23:59:59Z",
      "1969-12-31T23:59:59.999Z",
      "2000-02-29T12:00:00Z",
      "2024-02-29T00:00:00Z",
      "2100-03-01T00:00:00Z",
      "9999-12-31T23:59:59Z",
    ]) {
      const seconds = BigInt(Date.parse(iso) / 1000 - (iso.includes(".999") ? 0.999 : 0));
      const ts = create(TimestampSchema, { seconds, nanos: iso.includes(".999") ? 999e6 : 0 });
      expect(write(ts), iso).toBe(JSON.stringify(iso));
    }
  });

  it("optional fields set to undefined, as to-proto.ts builds them, are left out", () => {
    const session = sessionToProto({
      id: "s1",
      quizId: "q1",
      startedAt: new Date("2026-05-01T10:00:00.123Z"),
      completedAt: null,
      expiresAt: null,
      totalQuestions: 3,
      correctAnswers: 0,
      scorePercentage: null,
      answeredQuestions: 0,
      mode: "full",
    });
    const page = create(ListSessionsResponseSchema, { sessions: [session], hasMore: true });
    const out = written(ListSessionsResponseSchema, page);
    expect(out).toBe(expected(ListSessionsResponseSchema, page));
    expect(JSON.parse(out).sessions[0]).toEqual({
      id: "s1",
      quizId: "q1",
      startedAt: "2026-05-01T10:00:00.123Z",
      totalQuestions: 3,
      mode: "SESSION_MODE_FULL",
    });
  });

  it("leaves to protobuf-es what it does not write: a message of another type, int64, write options", () => {
    const write = compileJsonWriter(ListSessionsResponseSchema) as (m: object) => unknown;
    expect(write(create(AnswerConflictSchema, {}))).toBeUndefined();
    // A Duration's seconds are int64, which this writer leaves alone.
    expect(compileJsonWriter(DurationSchema)).toBeUndefined();
    expect(compileJsonWriter(ListSessionsRequestSchema)).toBeDefined();
    expect(compileJsonWriter(ListSessionsResponseSchema, { alwaysEmitImplicit: true })).toBe(
      undefined,
    );
  });
});
