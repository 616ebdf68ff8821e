/**
 * Encoded answers shared by calls whose values are equal: while any call
 * still holds an answer's bytes (one a client reads slowly, or never), a
 * call with an equal value gets those same bytes instead of encoding its
 * own copy. Each call still reads its own value; bytes are shared only
 * between values equal in every field, key order included, so what is
 * sent is what that call read: an edit or a deletion shows at once.
 * Nothing is kept once no call holds the bytes (weak references).
 */
export class SharedAnswers {
  /** The bytes last encoded for each key, while something holds them. */
  readonly #latest = new Map<string, WeakRef<Buffer>>();
  /** The value each held bytes were encoded from. */
  readonly #valueOf = new WeakMap<Buffer, unknown>();
  readonly #forget = new FinalizationRegistry<string>((key) => {
    if (this.#latest.get(key)?.deref() === undefined) this.#latest.delete(key);
  });

  /** `value`'s bytes: those encoded from an equal value under `key` if still held, else `encode()`'s. */
  bytes(key: string, value: unknown, encode: () => Buffer): Buffer {
    const held = this.#latest.get(key)?.deref();
    if (held !== undefined && sameJson(this.#valueOf.get(held), value)) return held;
    const bytes = encode();
    this.#latest.set(key, new WeakRef(bytes));
    this.#valueOf.set(bytes, value);
    this.#forget.register(bytes, key);
    return bytes;
  }
}

/** Whether two JSON values are equal: the same scalars, arrays and keys in the same order. */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  const others = Object.keys(y);
  if (keys.length !== others.length) return false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (key !== others[i] || !sameJson(x[key], y[key])) return false;
  }
  return true;
}
