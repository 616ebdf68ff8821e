import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CompleteSessionResponseSchema,
  GetSessionResponseSchema,
  ListSessionsRequestSchema,
  ListSessionsResponseSchema,
  PracticeSessionSchema,
  StartSessionResponseSchema,
  SubmitAnswerResponseSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import {
  absent,
  answer,
  question,
  session,
  text,
  unknown,
} from "../../test/support/session-arbitraries.js";
import { binaryEncoderFor } from "./session-binary.js";

function expectSameBytes<D extends DescMessage>(
  schema: D,
  init: fc.Arbitrary<MessageInitShape<D>>,
): void {
  const encode = binaryEncoderFor(schema);
  if (encode === undefined) throw new Error(`no encoder for ${schema.typeName}`);
  fc.assert(
    fc.property(init, fc.integer({ min: 0, max: 5 }), (fields, reserve) => {
      const message = create(schema, fields);
      const ours = encode(message, reserve);
      expect(Buffer.from(ours.subarray(reserve))).toEqual(Buffer.from(toBinary(schema, message)));
    }),
    { numRuns: 200 },
  );
}

describe("the hand-written response encoders", () => {
  it("write ListSessionsResponse exactly as toBinary does", () => {
    expectSameBytes(
      ListSessionsResponseSchema,
      fc.record({
        sessions: fc.array(session, { maxLength: 25 }),
        nextCursor: text,
        hasMore: fc.boolean(),
        $unknown: unknown,
      }),
    );
  });

  it("write StartSessionResponse exactly as toBinary does", () => {
    expectSameBytes(
      StartSessionResponseSchema,
      fc.record({
        session: absent(session),
        created: fc.boolean(),
        questions: fc.array(question, { maxLength: 12 }),
        $unknown: unknown,
      }),
    );
  });

  it("write GetSession, SubmitAnswer and CompleteSession responses exactly as toBinary does", () => {
    expectSameBytes(
      GetSessionResponseSchema,
      fc.record({ session: absent(session), questions: fc.array(question, { maxLength: 12 }) }),
    );
    expectSameBytes(
      SubmitAnswerResponseSchema,
      fc.record({ answer: absent(answer), session: absent(session) }),
    );
    expectSameBytes(CompleteSessionResponseSchema, fc.record({ session: absent(session) }));
  });

  it("leave other messages to toBinary", () => {
    expect(binaryEncoderFor(ListSessionsRequestSchema)).toBeUndefined();
  });

  it("refuse an int32 out of range, as toBinary does", () => {
    const encode = binaryEncoderFor(CompleteSessionResponseSchema);
    const message = create(CompleteSessionResponseSchema, {
      session: create(PracticeSessionSchema, { totalQuestions: 2 ** 31 }),
    });
    expect(() => toBinary(CompleteSessionResponseSchema, message)).toThrow();
    expect(() => encode?.(message, 0)).toThrow(/invalid int32/);
  });
});
