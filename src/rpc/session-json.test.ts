import { create, type DescMessage, type MessageInitShape, toJsonString } from "@bufbuild/protobuf";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CompleteSessionResponseSchema,
  GetSessionResponseSchema,
  ListSessionsRequestSchema,
  ListSessionsResponseSchema,
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
import { jsonEncoderFor } from "./session-json.js";

/** Same UTF-8 bytes as Connect's serializer (toJsonString, then TextEncoder), or both refuse. */
function expectSameJson<D extends DescMessage>(
  schema: D,
  init: fc.Arbitrary<MessageInitShape<D>>,
): void {
  const encode = jsonEncoderFor(schema);
  if (encode === undefined) throw new Error(`no encoder for ${schema.typeName}`);
  fc.assert(
    fc.property(init, (fields) => {
      const message = create(schema, fields);
      let expected: string | Error;
      try {
        expected = toJsonString(schema, message);
      } catch (err) {
        expected = err as Error;
      }
      if (expected instanceof Error) {
        expect(() => encode(message)).toThrow(/cannot encode/);
        return;
      }
      expect(Buffer.from(encode(message))).toEqual(Buffer.from(new TextEncoder().encode(expected)));
    }),
    { numRuns: 200 },
  );
}

describe("the hand-written JSON encoders", () => {
  it("write ListSessionsResponse exactly as toJsonString does", () => {
    expectSameJson(
      ListSessionsResponseSchema,
      fc.record({
        sessions: fc.array(session, { maxLength: 25 }),
        nextCursor: text,
        hasMore: fc.boolean(),
        $unknown: unknown,
      }),
    );
  });

  it("write StartSessionResponse exactly as toJsonString does", () => {
    expectSameJson(
      StartSessionResponseSchema,
      fc.record({
        session: absent(session),
        created: fc.boolean(),
        questions: fc.array(question, { maxLength: 12 }),
      }),
    );
  });

  it("write GetSession, SubmitAnswer and CompleteSession responses exactly as toJsonString does", () => {
    expectSameJson(
      GetSessionResponseSchema,
      fc.record({ session: absent(session), questions: fc.array(question, { maxLength: 12 }) }),
    );
    expectSameJson(
      SubmitAnswerResponseSchema,
      fc.record({ answer: absent(answer), session: absent(session) }),
    );
    expectSameJson(CompleteSessionResponseSchema, fc.record({ session: absent(session) }));
  });

  it("leave other messages to toJsonString", () => {
    expect(jsonEncoderFor(ListSessionsRequestSchema)).toBeUndefined();
  });
});
