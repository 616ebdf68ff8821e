import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

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

/**
 * A small OTLP/HTTP receiver (http/json, POST /v1/traces) on 127.0.0.1: what a
 * collector would get. Spans that arrive are kept in `spans`.
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
        if (req.url === "/v1/traces" && /json/.test(req.headers["content-type"] ?? "")) {
          this.#take(JSON.parse(Buffer.concat(chunks).toString("utf8")));
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

  #take(body: {
    resourceSpans?: {
      resource?: { attributes?: OtlpAttribute[] };
      scopeSpans?: {
        spans?: (Omit<ReceivedSpan, "attributes" | "service" | "events"> & {
          attributes?: OtlpAttribute[];
          events?: { name: string }[];
        })[];
      }[];
    }[];
  }): void {
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
