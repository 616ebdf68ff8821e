import { describe, expect, it } from "vitest";
import { AnswerHeaders, RequestHeaders } from "./lazy-headers.js";

describe("headers filled only once touched", () => {
  const raw = {
    ":path": "/x",
    "content-type": "application/grpc",
    "set-cookie": ["a=1", "b=2"],
    "x-n": "7",
  };

  it("a request's read as a Headers of every header but the pseudo-headers, whichever method reads first", () => {
    const expected = new Headers();
    expected.append("content-type", "application/grpc");
    expected.append("set-cookie", "a=1");
    expected.append("set-cookie", "b=2");
    expected.append("x-n", "7");
    const reads: ((h: Headers) => unknown)[] = [
      (h) => h.get("x-n"),
      (h) => h.has("content-type"),
      (h) => [...h],
      (h) => [...h.entries()],
      (h) => [...h.keys()],
      (h) => [...h.values()],
      (h) => h.getSetCookie(),
      (h) => {
        const seen: string[] = [];
        h.forEach((v, k) => {
          seen.push(`${k}=${v}`);
        });
        return seen;
      },
    ];
    for (const read of reads) expect(read(new RequestHeaders(raw))).toEqual(read(expected));
  });

  it("keeps what is written after what it was made of", () => {
    const h = new RequestHeaders(raw);
    h.set("x-n", "8");
    h.append("x-m", "1");
    h.delete("content-type");
    expect([...h]).toEqual([
      ["set-cookie", "a=1"],
      ["set-cookie", "b=2"],
      ["x-m", "1"],
      ["x-n", "8"],
    ]);
  });

  it("an answer's untouched are written as the object they started from; touched, as they now are", () => {
    const initial = { "content-type": "application/grpc+proto" };
    expect(new AnswerHeaders(initial).toNode()).toBe(initial);
    const read = new AnswerHeaders(initial);
    expect(read.get("content-type")).toBe("application/grpc+proto");
    expect(read.toNode()).toEqual(initial);
    const written = new AnswerHeaders({ "grpc-status": "0" });
    written.set("grpc-status", "5");
    written.append("set-cookie", "a=1");
    written.append("set-cookie", "b=2");
    expect(written.toNode()).toEqual({ "grpc-status": "5", "set-cookie": ["a=1", "b=2"] });
  });
});
