import {
  type ClientHttp2Session,
  type ClientHttp2Stream,
  connect,
  constants as h2,
} from "node:http2";
import { type Socket as NetSocket, connect as netConnect } from "node:net";

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

/** One HTTP/2 frame: its 9-byte header, then `payload`. */
export function h2Frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.length, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(streamId, 5);
  return Buffer.concat([header, payload]);
}

/**
 * A rapid-reset flood as a raw client sends it, in one write: the preface,
 * then `streams` × (HEADERS of `POST /`, RST_STREAM CANCEL). Resolves with
 * the error codes of the GOAWAY frames the server sent before it closed the
 * connection (or within `ms`).
 */
export async function rawResetFlood(port: number, streams: number, ms = 10_000): Promise<number[]> {
  const socket = netConnect(port, "127.0.0.1");
  socket.on("error", () => {});
  // HPACK, static table: :method POST, :scheme http, :path /, :authority "x".
  const headerBlock = Buffer.from([0x83, 0x86, 0x84, 0x41, 1, 0x78]);
  const cancel = Buffer.alloc(4);
  cancel.writeUInt32BE(h2.NGHTTP2_CANCEL);
  const frames = [
    Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
    h2Frame(4, 0, 0, Buffer.alloc(0)),
  ];
  for (let i = 0; i < streams; i++) {
    const id = 1 + 2 * i;
    frames.push(h2Frame(1, 0x4, id, headerBlock), h2Frame(3, 0, id, cancel));
  }
  const goaways: number[] = [];
  let pending = Buffer.alloc(0);
  socket.on("data", (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      if (pending[3] === 7) goaways.push(pending.readUInt32BE(13));
      pending = pending.subarray(9 + length);
    }
  });
  const closed = new Promise((resolve) => socket.once("close", resolve));
  socket.write(Buffer.concat(frames));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
  socket.destroy();
  return goaways;
}

/** The client preface and an empty SETTINGS frame: what an HTTP/2 connection sends first. */
export const CLIENT_PREFACE = Buffer.concat([
  Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"),
  h2Frame(4, 0, 0, Buffer.alloc(0)),
]);

/**
 * An HPACK header block of literal fields without indexing (no Huffman):
 * enough for a raw client to send any request head.
 */
export function headerBlock(headers: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  const length = (n: number) => {
    // Lengths under 127 in one byte; a 7-bit prefix integer beyond (RFC 7541 §5.1).
    if (n < 127) return Buffer.from([n]);
    const bytes = [127];
    let rest = n - 127;
    while (rest >= 128) {
      bytes.push((rest % 128) + 128);
      rest = Math.floor(rest / 128);
    }
    bytes.push(rest);
    return Buffer.from(bytes);
  };
  for (const [name, value] of headers) {
    parts.push(Buffer.from([0]), length(name.length), Buffer.from(name));
    parts.push(length(Buffer.byteLength(value)), Buffer.from(value));
  }
  return Buffer.concat(parts);
}

/** A frame the server sent: its type, flags, stream and payload. */
export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/**
 * A raw HTTP/2 connection to 127.0.0.1:`port`, its preface sent: `frames`
 * collects what the server sends, `closed` resolves when it closes.
 */
export function rawH2(port: number): {
  socket: NetSocket;
  frames: Frame[];
  closed: Promise<void>;
} {
  const socket = netConnect(port, "127.0.0.1");
  socket.on("error", () => {});
  const frames: Frame[] = [];
  let pending = Buffer.alloc(0);
  socket.on("data", (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const length = pending.readUIntBE(0, 3);
      if (pending.length < 9 + length) break;
      frames.push({
        type: pending[3] ?? 0,
        flags: pending[4] ?? 0,
        streamId: pending.readUInt32BE(5) & 0x7fffffff,
        payload: pending.subarray(9, 9 + length),
      });
      pending = pending.subarray(9 + length);
    }
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write(CLIENT_PREFACE);
  return { socket, frames, closed };
}
