import { describe, expect, it } from "vitest";
import { SharedAnswers } from "./shared-answers.js";

const quiz = (prompt: string) => ({
  id: "7",
  title: "Quiz",
  questions: [
    { id: "1", position: 1, prompt },
    { id: "2", position: 2, prompt: "second" },
  ],
});

describe("answers shared by equal values", () => {
  it("encodes an equal value once while its bytes are held, and gives the same bytes", () => {
    const answers = new SharedAnswers();
    let encoded = 0;
    const encode = (value: unknown) => () => {
      encoded++;
      return Buffer.from(JSON.stringify(value));
    };
    // Equal, not the same objects: each call reads its own rows.
    const a = quiz("p".repeat(2800));
    const b = quiz("p".repeat(2800));
    const first = answers.bytes("7", a, encode(a));
    const second = answers.bytes("7", b, encode(b));
    expect(second).toBe(first);
    expect(encoded).toBe(1);
  });

  it("encodes again when anything in the value differs: an edited prompt, an order, a field", () => {
    const answers = new SharedAnswers();
    const held: Buffer[] = [];
    const give = (value: unknown) => {
      const bytes = answers.bytes("7", value, () => Buffer.from(JSON.stringify(value)));
      held.push(bytes);
      return JSON.parse(bytes.toString()) as unknown;
    };
    const edited = quiz("edited");
    const reordered = quiz("p");
    reordered.questions.reverse();
    const values: unknown[] = [
      quiz("p"),
      edited,
      reordered,
      { ...quiz("p"), title: "Other" },
      { ...quiz("p"), extra: null },
      { ...quiz("p"), questions: [] },
      { ...quiz("p"), id: 7 },
    ];
    for (const value of values) expect(give(value)).toEqual(value);
    expect(new Set(held).size).toBe(values.length);
  });

  it("never gives one key's bytes for another key", () => {
    const answers = new SharedAnswers();
    const a = answers.bytes("7", quiz("p"), () => Buffer.from("seven"));
    const b = answers.bytes("8", quiz("p"), () => Buffer.from("eight"));
    expect(b.toString()).toBe("eight");
    expect(a.toString()).toBe("seven");
  });
});
