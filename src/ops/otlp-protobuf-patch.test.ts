import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { fc } from "@fast-check/vitest";
import { type Attributes, ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";
import { ProtobufTraceSerializer } from "@opentelemetry/otlp-transformer";
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from "@opentelemetry/sdk-trace";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * patches/@opentelemetry+otlp-transformer+0.301.0.patch writes OTLP protobuf
 * in one pass, long strings encoded natively. Here the patched serializer
 * and the package's own code (a copy with the patch taken out again) encode
 * the same spans: the bytes must be the same, whatever the strings (ASCII,
 * any UTF-16, lone surrogates, short and long). Fails, too, if the patch is
 * not applied.
 */

const project = fileURLToPath(new URL("../../", import.meta.url));
const PATCH = join(project, "patches/@opentelemetry+otlp-transformer+0.301.0.patch");
const PACKAGE = "node_modules/@opentelemetry/otlp-transformer";

// Inside node_modules, so the copy resolves its imports as the package does.
const root = mkdtempSync(join(project, "node_modules", ".otlp-unpatched-"));
let unpatched: typeof ProtobufTraceSerializer;

beforeAll(async () => {
  cpSync(join(project, PACKAGE), join(root, PACKAGE), { recursive: true });
  unapply(readFileSync(PATCH, "utf8"), root);
  const entry = pathToFileURL(join(root, PACKAGE, "dist/index.mjs")).href;
  ({ ProtobufTraceSerializer: unpatched } = await import(entry));
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The package's own files again: in each hunk, the patched side put back to the original. */
function unapply(patch: string, into: string): void {
  for (const diff of patch.split(/^diff --git /m).slice(1)) {
    const file = join(into, /^\+\+\+ b\/(.+)$/m.exec(diff)?.[1] ?? "");
    let text = readFileSync(file, "utf8");
    for (const hunk of diff.split(/^@@.*\n/m).slice(1)) {
      const lines = hunk.split("\n").filter((line) => /^[ +-]/.test(line));
      const side = (dropped: string) =>
        lines
          .filter((line) => line[0] !== dropped)
          .map((line) => line.slice(1))
          .join("\n");
      const patched = side("-");
      if (!text.includes(patched)) throw new Error(`${file}: the patch is not applied`);
      text = text.replace(patched, () => side("+"));
    }
    writeFileSync(file, text);
  }
}

const exporter = new InMemorySpanExporter();
const tracer = new TracerProvider({
  spanProcessors: [new SimpleSpanProcessor({ exporter })],
}).getTracer("otlp-patch-test");

/** Any UTF-16 code units, lone surrogates too: what a JavaScript string can hold. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
/** Short strings take the package's own loop, long ones (32 and up) the patched path. */
const text = fc.oneof(
  fc.string({ maxLength: 31 }),
  fc.string({ unit: codeUnit, maxLength: 31 }),
  fc.string({ minLength: 32, maxLength: 800, size: "max" }),
  fc.string({ unit: codeUnit, minLength: 32, maxLength: 400, size: "max" }),
);
const attributes = fc.dictionary(text, fc.oneof(text, fc.integer(), fc.array(text)), {
  maxKeys: 6,
});
const hex = (length: number) =>
  fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`)).filter((h) => !/^0+$/.test(h));
const spanInput = fc.record({
  name: text,
  attributes,
  event: fc.tuple(text, attributes),
  parent: fc.record({ traceId: hex(32), spanId: hex(16) }),
});

type SpanInput = typeof spanInput extends fc.Arbitrary<infer T> ? T : never;

function makeSpans(inputs: SpanInput[]): ReadableSpan[] {
  exporter.reset();
  for (const input of inputs) {
    const parent = trace.setSpanContext(ROOT_CONTEXT, {
      ...input.parent,
      traceFlags: 1,
      isRemote: true,
    });
    const span = tracer.startSpan(
      input.name,
      { kind: SpanKind.SERVER, attributes: input.attributes as Attributes },
      parent,
    );
    span.addEvent(input.event[0], input.event[1] as Attributes);
    span.setStatus({ code: 2, message: input.name });
    span.end();
  }
  return exporter.getFinishedSpans();
}

describe("the patched OTLP protobuf serializer", () => {
  it("encodes spans to the same bytes as the package's own code", () => {
    fc.assert(
      fc.property(fc.array(spanInput, { minLength: 1, maxLength: 5 }), (inputs) => {
        const spans = makeSpans(inputs);
        const ours = ProtobufTraceSerializer.serializeRequest(spans);
        const theirs = unpatched.serializeRequest(spans);
        expect(Buffer.from(ours ?? [])).toEqual(Buffer.from(theirs ?? []));
      }),
      { numRuns: 300 },
    );
  });
});
