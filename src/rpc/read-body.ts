import type { Readable } from "node:stream";

/** A request body read up to a cap, and a replay of it for whoever reads it next. */
export interface ReadBody {
  /** What came, whole when `whole`. */
  bytes: Uint8Array;
  /** Whether the body ended within the cap. */
  whole: boolean;
  /** What was read, then the rest: for Connect's handler, which reads the body itself. */
  replay(): AsyncIterable<Uint8Array>;
}

/**
 * Reads `body` until it ends or more than `cap` bytes came. Undefined if the
 * stream failed or closed first (the client went away). Events rather than an async iterator, and left on once
 * settled rather than taken off: one call of a unary RPC is usually one
 * chunk, and its body is read once.
 */
export function readUpTo(body: Readable, cap: number): Promise<ReadBody | undefined> {
  const chunks: Uint8Array[] = [];
  const result = (whole: boolean): ReadBody => {
    const bytes = chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
    async function* replay() {
      yield* chunks;
      if (!whole) yield* body;
    }
    return { bytes, whole, replay };
  };
  if (body.readableEnded) return Promise.resolve(result(true));
  if (body.destroyed) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    let size = 0;
    let settled = false;
    const settle = (read: ReadBody | undefined) => {
      if (settled) return;
      settled = true;
      resolve(read);
    };
    body.on("data", (chunk: Uint8Array) => {
      if (settled) return;
      chunks.push(chunk);
      size += chunk.length;
      if (size > cap) {
        body.pause();
        settle(result(false));
      }
    });
    body.once("end", () => settle(result(true)));
    // Listened to for as long as the body lives: an error with no listener would end the process.
    body.on("error", () => settle(undefined));
    body.once("close", () => settle(undefined));
  });
}
