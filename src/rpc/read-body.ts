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
 * stream failed or closed first (the client went away). Events rather than
 * an async iterator: one call of a unary RPC is usually one chunk.
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
    const settle = (read: ReadBody | undefined) => {
      body.off("data", onData);
      body.off("end", onEnd);
      body.off("error", onGone);
      body.off("close", onGone);
      resolve(read);
    };
    const onData = (chunk: Uint8Array) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > cap) {
        body.pause();
        settle(result(false));
      }
    };
    const onEnd = () => settle(result(true));
    const onGone = () => settle(undefined);
    body.on("data", onData);
    body.once("end", onEnd);
    body.once("error", onGone);
    body.once("close", onGone);
  });
}
