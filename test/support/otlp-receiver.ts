import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";

/** A span as OTLP/JSON carries it (ids hex, kind a number: SERVER 2, CLIENT 3, PRODUCER 4, CONSUMER 5). */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean | undefined>;
  events: { name: string }[];
  status?: { code?: number; message?: string };
  /** The exporting process's `service.name`. */
  service: string;
}

export const SpanKinds = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
/** ExportTraceServiceRequest as OTLP/JSON writes it (the fields read here). */
interface TraceRequest {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: (Omit<ReceivedSpan, "attributes" | "service" | "events"> & {
        attributes?: OtlpAttribute[];
        events?: { name: string }[];
      })[];
    }[];
  }[];
}

/**
 * A small OTLP/HTTP receiver (POST /v1/traces, http/protobuf or http/json) on
 * 127.0.0.1: what a collector would get. Spans that arrive are kept in `spans`.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  #server: Server | undefined;

  /** Starts listening; resolves with the base URL (for OTEL_EXPORTER_OTLP_ENDPOINT). */
  async start(): Promise<string> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        const type = req.headers["content-type"] ?? "";
        if (req.url === "/v1/traces" && /json/.test(type)) {
          this.#take(JSON.parse(body.toString("utf8")));
        } else if (req.url === "/v1/traces" && /protobuf/.test(type)) {
          this.#take(traceRequestFromProtobuf(body));
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    this.#server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) =>
      this.#server ? this.#server.close(() => resolve()) : resolve(),
    );
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  /** Waits until `found` returns something for the spans received so far (10 s at most). */
  async waitFor<T>(found: (spans: ReceivedSpan[]) => T | undefined, ms = 10_000): Promise<T> {
    const until = Date.now() + ms;
    for (;;) {
      const value = found(this.spans);
      if (value !== undefined && value !== false) return value;
      if (Date.now() > until) throw new Error(`no such spans within ${ms} ms: ${this.describe()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  describe(): string {
    return JSON.stringify(
      this.spans.map((s) => [s.service, s.name, s.kind, s.traceId, s.spanId, s.parentSpanId]),
    );
  }

  #take(body: TraceRequest): void {
    for (const rs of body.resourceSpans ?? []) {
      const service = String(attributes(rs.resource?.attributes)["service.name"] ?? "");
      for (const ss of rs.scopeSpans ?? []) {
        for (const span of ss.spans ?? []) {
          this.spans.push({
            ...span,
            parentSpanId: span.parentSpanId || undefined,
            attributes: attributes(span.attributes),
            events: span.events ?? [],
            service,
          });
        }
      }
    }
  }
}

function attributes(list: OtlpAttribute[] | undefined): ReceivedSpan["attributes"] {
  const out: ReceivedSpan["attributes"] = {};
  for (const { key, value } of list ?? []) {
    out[key] =
      value.stringValue ??
      (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.boolValue ??
      value.doubleValue;
  }
  return out;
}

/** Field number → values: varints as numbers, everything else as its bytes. */
type Fields = Map<number, (number | Uint8Array)[]>;

/** One protobuf message's fields, read with protobuf-es's wire reader. */
function fields(bytes: Uint8Array): Fields {
  const out: Fields = new Map();
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [no, wire] = reader.tag();
    const value =
      wire === WireType.Varint
        ? Number(reader.uint64())
        : wire === WireType.LengthDelimited
          ? reader.bytes()
          : reader.skip(wire, no);
    const values = out.get(no);
    if (values) values.push(value);
    else out.set(no, [value]);
  }
  return out;
}

const messages = (f: Fields, n: number) => (f.get(n) ?? []).map((v) => fields(v as Uint8Array));
const text = (f: Fields, n: number) => {
  const v = f.get(n)?.[0];
  return v === undefined ? undefined : Buffer.from(v as Uint8Array).toString("utf8");
};
const hex = (f: Fields, n: number) => {
  const v = f.get(n)?.[0];
  return v === undefined ? undefined : Buffer.from(v as Uint8Array).toString("hex");
};

/** KeyValue (1 key, 2 AnyValue: 1 string, 2 bool, 3 int, 4 double) as OTLP/JSON has it. */
function keyValues(list: Fields[]): OtlpAttribute[] {
  return list.map((kv) => {
    const any = messages(kv, 2)[0] ?? new Map();
    const double = any.get(4)?.[0] as Uint8Array | undefined;
    return {
      key: text(kv, 1) ?? "",
      value: {
        stringValue: text(any, 1),
        boolValue: any.has(2) ? any.get(2)?.[0] === 1 : undefined,
        intValue: any.get(3)?.[0] as number | undefined,
        doubleValue: double && Buffer.from(double).readDoubleLE(0),
      },
    };
  });
}

/** An http/protobuf ExportTraceServiceRequest in OTLP/JSON's shape (opentelemetry-proto's field numbers). */
function traceRequestFromProtobuf(body: Uint8Array): TraceRequest {
  return {
    resourceSpans: messages(fields(body), 1).map((rs) => ({
      resource: { attributes: keyValues(messages(messages(rs, 1)[0] ?? new Map(), 1)) },
      scopeSpans: messages(rs, 2).map((ss) => ({
        spans: messages(ss, 2).map((span) => {
          const status = messages(span, 15)[0] ?? new Map();
          return {
            traceId: hex(span, 1) ?? "",
            spanId: hex(span, 2) ?? "",
            parentSpanId: hex(span, 4),
            name: text(span, 5) ?? "",
            kind: (span.get(6)?.[0] as number | undefined) ?? 0,
            attributes: keyValues(messages(span, 9)),
            events: messages(span, 11).map((event) => ({ name: text(event, 2) ?? "" })),
            status: { code: status.get(3)?.[0] as number | undefined, message: text(status, 2) },
          };
        }),
      })),
    })),
  };
}
