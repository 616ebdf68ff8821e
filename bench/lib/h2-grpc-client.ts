import { type ClientHttp2Session, type ClientHttp2Stream, connect, constants } from "node:http2";

/**
 * A gRPC load client on bare `node:http2`: one connection, pre-encoded
 * request bytes, the answer told by `grpc-status` only. About a tenth of
 * grpc-js's CPU per call, so an open loop at several thousand calls a second
 * measures the server, not the load generator starved of CPU on a shared box.
 * Like grpc-js, it never opens more streams than the server allows at once
 * (Node's client does not hold them back, and the server refuses or ends
 * the connection): the rest wait here, in order, and that wait counts in
 * their latency.
 */
export class H2GrpcClient {
  #session: ClientHttp2Session;
  readonly #headers: Record<string, string>;
  /** Streams open now, and calls waiting for one. */
  #open = 0;
  readonly #waiting: (() => void)[] = [];
  /** GOAWAY error codes received, by code (a new connection follows each). */
  readonly goaways: Record<number, number> = {};

  constructor(
    private readonly address: string,
    metadata: Record<string, string> = {},
  ) {
    this.#session = this.#connect();
    this.#headers = {
      [constants.HTTP2_HEADER_METHOD]: "POST",
      "content-type": "application/grpc",
      te: "trailers",
      ...metadata,
    };
  }

  #connect(): ClientHttp2Session {
    const session = connect(`http://${this.address}`);
    session.on("error", () => {});
    session.on("goaway", (code) => {
      this.goaways[code] = (this.goaways[code] ?? 0) + 1;
    });
    return session;
  }

  /** One unary call of `message` (protobuf bytes): "OK" or the status's name. */
  call(path: string, message: Uint8Array): Promise<string> {
    const framed = Buffer.allocUnsafe(message.length + 5);
    framed[0] = 0;
    framed.writeUInt32BE(message.length, 1);
    framed.set(message, 5);
    return new Promise((resolve) => {
      const limit = this.#session.remoteSettings.maxConcurrentStreams ?? 100;
      if (this.#open >= limit) this.#waiting.push(() => this.#send(path, framed, resolve));
      else this.#send(path, framed, resolve);
    });
  }

  #send(path: string, framed: Buffer, resolve: (status: string) => void): void {
    if (this.#session.closed || this.#session.destroyed) this.#session = this.#connect();
    let req: ClientHttp2Stream;
    try {
      req = this.#session.request({ ...this.#headers, [constants.HTTP2_HEADER_PATH]: path });
    } catch (err) {
      // The connection went away under us (GOAWAY): the next call opens a new one.
      this.#session.destroy();
      resolve(`error:${(err as { code?: string }).code ?? err}`);
      return;
    }
    this.#open++;
    let status: string | undefined;
    const grpcStatus = (h: Record<string, unknown>) => {
      const s = h["grpc-status"];
      if (s !== undefined) status = s === "0" ? "OK" : (GRPC_CODES[Number(s)] ?? String(s));
    };
    req.on("response", grpcStatus);
    req.on("trailers", grpcStatus);
    req.on("data", () => {});
    req.on("error", () => {});
    req.on("close", () => {
      this.#open--;
      this.#waiting.shift()?.();
      resolve(status ?? `rst:${req.rstCode}`);
    });
    req.end(framed);
  }

  close(): void {
    this.#session.close();
  }
}

const GRPC_CODES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
];
