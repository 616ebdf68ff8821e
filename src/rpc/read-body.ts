/** A request body read up to a cap, and a replay of it for whoever reads it next. */
export interface ReadBody {
  /** What came, whole when `whole`. */
  bytes: Uint8Array;
  /** Whether the body ended within the cap. */
  whole: boolean;
  /** What was read, then the rest: for Connect's handler, which reads the body itself. */
  replay: AsyncIterable<Uint8Array>;
}

/**
 * Reads `body` until it ends or more than `cap` bytes came. Undefined if the
 * stream failed (the client reset it).
 */
export async function readUpTo(
  body: AsyncIterable<Uint8Array>,
  cap: number,
): Promise<ReadBody | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const it = body[Symbol.asyncIterator]();
  let whole = true;
  try {
    for (let r = await it.next(); !r.done; r = await it.next()) {
      chunks.push(r.value);
      size += r.value.length;
      if (size > cap) {
        whole = false;
        break;
      }
    }
  } catch {
    return undefined;
  }
  const bytes = chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
  async function* replay() {
    yield* chunks;
    if (!whole) for (let r = await it.next(); !r.done; r = await it.next()) yield r.value;
  }
  return { bytes, whole, replay: replay() };
}
