import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  constants as h2,
} from "node:http2";

/**
 * A bare node:http2 client for attacks the friendly clients never make:
 * many streams on one connection, streams reset right after they are sent.
 */
export function h2Connect(baseUrl: string): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = connect(baseUrl);
    // Resolved once the server's SETTINGS arrived: session.remoteSettings is then theirs.
    session.once("remoteSettings", () => resolve(session));
    session.once("error", reject);
  });
}

/** A gRPC length-prefixed message (uncompressed). */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/** Starts a gRPC call of `path` with `body` sent in full. */
export function grpcRequest(
  session: ClientHttp2Session,
  path: string,
  body: Buffer,
  headers: Record<string, string> = {},
): ClientHttp2Stream {
  const stream = session.request({
    ":method": "POST",
    ":path": path,
    "content-type": "application/grpc",
    te: "trailers",
    ...headers,
  });
  stream.on("error", () => {});
  stream.end(body);
  return stream;
}

/** How a server-streaming call stands: live (a message came) or ended with a grpc-status. */
export type StreamOutcome = { live: true } | { live: false; status: number };

/**
 * Resolves once the call is live (its first message arrived) or ended
 * (trailers-only answer, or trailers): with the grpc-status then.
 */
export function firstOutcome(stream: ClientHttp2Stream): Promise<StreamOutcome> {
  return new Promise((resolve) => {
    let status: number | undefined;
    stream.on("response", (headers) => {
      const s = headers["grpc-status"];
      if (s !== undefined) status = Number(s);
    });
    stream.on("trailers", (trailers) => {
      status = Number(trailers["grpc-status"]);
    });
    stream.on("data", () => resolve({ live: true }));
    stream.on("close", () =>
      resolve({ live: false, status: status ?? (-stream.rstCode || h2.NGHTTP2_INTERNAL_ERROR) }),
    );
  });
}

/** Resolves with the grpc-status when the call ends (-rstCode if reset instead). */
export function endStatus(stream: ClientHttp2Stream): Promise<number> {
  return new Promise((resolve) => {
    let status: number | undefined;
    stream.on("response", (headers) => {
      if (headers["grpc-status"] !== undefined) status = Number(headers["grpc-status"]);
    });
    stream.on("trailers", (trailers) => {
      status = Number(trailers["grpc-status"]);
    });
    stream.on("data", () => {});
    stream.on("close", () => resolve(status ?? -stream.rstCode));
  });
}

/** A Health/Watch request for the whole server (an empty HealthCheckRequest). */
export const WATCH_PATH = "/grpc.health.v1.Health/Watch";
export const EMPTY_MESSAGE = grpcFrame(new Uint8Array());
