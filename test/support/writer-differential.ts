import type { DescMessage } from "@bufbuild/protobuf";
import fc from "fast-check";
import { expect, it } from "vitest";
import { messageOf, OUTPUTS } from "./proto-arbitraries.js";

type Write = (message: object) => string | undefined;

/**
 * A compiled writer (src/rpc/proto-*.ts) against protobuf-es, its output as text:
 * `reference` is protobuf-es's, `compiled` the writer of a schema (undefined where it
 * declines the schema, and its output undefined where it declines a message).
 */
export function writerDifferential(
  reference: (schema: DescMessage, message: never) => string,
  compiled: (schema: DescMessage) => Write | undefined,
) {
  /** What protobuf-es writes, or the message of what it throws. */
  const expected = (schema: DescMessage, message: object): string => {
    try {
      return reference(schema, message as never);
    } catch (e) {
      return `throws: ${(e as Error).message}`;
    }
  };
  /** What the compiled writer writes, asking protobuf-es where it declines, as its caller does. */
  const written = (schema: DescMessage, message: object): string =>
    compiled(schema)?.(message) ?? expected(schema, message);
  /** The tests every writer passes: it compiles each response message, and writes any as protobuf-es does. */
  const testResponses = () => {
    it("compiles every response message of the practice API", () => {
      for (const schema of OUTPUTS) expect(compiled(schema), schema.typeName).toBeDefined();
    });
    it.each(OUTPUTS.map((s) => [s.typeName, s] as const))("%s: any message", (_name, schema) => {
      fc.assert(
        fc.property(messageOf(schema), (message) => {
          expect(written(schema, message)).toBe(expected(schema, message));
        }),
        { numRuns: 300 },
      );
    });
  };
  return { expected, written, testResponses };
}
