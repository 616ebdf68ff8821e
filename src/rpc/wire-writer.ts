import { protoInt64 } from "@bufbuild/protobuf";

/**
 * A one-pass protobuf writer into one reused scratch buffer, for the
 * hand-written encoders of our hot responses (session-binary.ts). It writes
 * the bytes protobuf-es's `BinaryWriter` writes (minimal varints, negative
 * int32 as ten bytes, UTF-8 with U+FFFD for lone surrogates) without an
 * array of chunks per nested message and a TextEncoder call per string.
 *
 * A nested message's length is not known before it is written: one byte is
 * reserved for it (most of ours are under 128 bytes) and the body is moved
 * up when the length needs more. Encoding is synchronous, so one scratch
 * buffer serves every call; `take` copies the result out.
 */
let buf = Buffer.allocUnsafe(16 * 1024);
let pos = 0;

/** Starts a message, leaving `reserve` bytes free in front (a gRPC envelope, say). */
export function begin(reserve: number): void {
  pos = reserve;
}

/** The bytes written since `begin`, front reserve included, as a new buffer of their own. */
export function take(): Buffer {
  const out = Buffer.allocUnsafe(pos);
  buf.copy(out, 0, 0, pos);
  return out;
}

function ensure(more: number): void {
  if (pos + more <= buf.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, pos + more));
  buf.copy(bigger, 0, 0, pos);
  buf = bigger;
}

/** An unsigned varint below 2^32 (tags, lengths). */
export function uint32(value: number): void {
  ensure(5);
  while (value > 0x7f) {
    buf[pos++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  buf[pos++] = value;
}

/** A varint field: `tag`, then an int32 (negative: ten bytes, as protobuf-es writes it). */
export function int32Field(tag: number, value: number): void {
  if ((value | 0) !== value) throw new Error(`invalid int32: ${value}`);
  uint32(tag);
  if (value >= 0) {
    uint32(value);
    return;
  }
  ensure(10);
  for (let i = 0; i < 9; i++) {
    buf[pos++] = (value & 127) | 128;
    value >>= 7;
  }
  buf[pos++] = 1;
}

/** A bool field. */
export function boolField(tag: number, value: boolean): void {
  uint32(tag);
  ensure(1);
  buf[pos++] = value ? 1 : 0;
}

/** An int64 field (a bigint, or what protobuf-es accepts for one), as protobuf-es writes it. */
export function int64Field(tag: number, value: bigint | string | number): void {
  uint32(tag);
  if (typeof value === "bigint" && value >= 0n && value < 0x80000000n) {
    uint32(Number(value));
    return;
  }
  const { lo, hi } = protoInt64.enc(value);
  ensure(10);
  for (let i = 0; i < 28; i += 7) {
    const shift = lo >>> i;
    const hasNext = !(shift >>> 7 === 0 && hi === 0);
    buf[pos++] = (hasNext ? shift | 0x80 : shift) & 0xff;
    if (!hasNext) return;
  }
  const splitBits = ((lo >>> 28) & 0x0f) | ((hi & 0x07) << 4);
  const hasMoreBits = hi >> 3 !== 0;
  buf[pos++] = (hasMoreBits ? splitBits | 0x80 : splitBits) & 0xff;
  if (!hasMoreBits) return;
  for (let i = 3; i < 31; i += 7) {
    const shift = hi >>> i;
    const hasNext = shift >>> 7 !== 0;
    buf[pos++] = (hasNext ? shift | 0x80 : shift) & 0xff;
    if (!hasNext) return;
  }
  buf[pos++] = (hi >>> 31) & 0x01;
}

/** A string field: tag, UTF-8 length, UTF-8 bytes. */
export function stringField(tag: number, value: string): void {
  uint32(tag);
  const n = value.length;
  // At most 3 bytes per UTF-16 unit, and 5 for the length.
  ensure(n * 3 + 5);
  if (n * 3 < 128) {
    // The length takes one byte: write the text after it, then the length.
    const at = pos++;
    writeText(value);
    buf[at] = pos - at - 1;
    return;
  }
  uint32(Buffer.byteLength(value, "utf8"));
  writeText(value);
}

function writeText(value: string): void {
  const start = pos;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c >= 0x80) {
      // Not ASCII: Node's encoder (lone surrogates become U+FFFD, as with TextEncoder).
      pos = start + buf.write(value, start);
      return;
    }
    buf[pos++] = c;
  }
}

/** Opens a length-delimited field (a nested message): returns where to `close` it. */
export function open(tag: number): number {
  uint32(tag);
  ensure(1);
  return pos++;
}

/** Closes what `open` opened: writes the length, moving the body up if it needs more bytes. */
export function close(at: number): void {
  const length = pos - at - 1;
  if (length < 0x80) {
    buf[at] = length;
    return;
  }
  let width = 1;
  for (let v = length >>> 7; v > 0; v >>>= 7) width++;
  ensure(width - 1);
  buf.copyWithin(at + width, at + 1, pos);
  let v = length;
  let i = at;
  while (v > 0x7f) {
    buf[i++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[i] = v;
  pos = at + width + length;
}

/** Unknown fields, written back as protobuf-es does (tag, then the raw bytes). */
export function unknownFields(
  unknown: ReadonlyArray<{ no: number; wireType: number; data: Uint8Array }> | undefined,
): void {
  if (unknown === undefined) return;
  for (const { no, wireType, data } of unknown) {
    uint32(((no << 3) | wireType) >>> 0);
    ensure(data.length);
    buf.set(data, pos);
    pos += data.length;
  }
}
