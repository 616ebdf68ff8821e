import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local OTLP/HTTP endpoint that takes every export and keeps nothing but
 * the count of requests and bytes: the traced services' exporter sends to it
 * as it would to a collector, so the export's cost is in the service's CPU.
 */
export class OtlpSink {
  requests = 0;
  bytes = 0;
  #server: Server | undefined;

  /** Listens on 127.0.0.1; resolves with the base URL (OTEL_EXPORTER_OTLP_ENDPOINT). */
  async start(): Promise<string> {
    const server = createServer((req, res) => {
      req.on("data", (chunk: Buffer) => {
        this.bytes += chunk.length;
      });
      req.on("end", () => {
        this.requests++;
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      });
    });
    this.#server = server;
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    return new Promise((resolve) =>
      this.#server ? this.#server.close(() => resolve()) : resolve(),
    );
  }
}
