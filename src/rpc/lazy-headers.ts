import type { IncomingHttpHeaders } from "node:http";

/** Headers as a class with methods (the DOM's types declare them as properties, which a subclass cannot override). */
type HeadersClass = new () => {
  append(name: string, value: string): void;
  delete(name: string): void;
  get(name: string): string | null;
  getSetCookie(): string[];
  has(name: string): boolean;
  set(name: string, value: string): void;
  forEach(callback: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void;
  entries(): ReturnType<Headers["entries"]>;
  keys(): ReturnType<Headers["keys"]>;
  values(): ReturnType<Headers["values"]>;
  [Symbol.iterator](): ReturnType<Headers["entries"]>;
};

/**
 * A `Headers` filled only once something reads or writes it. Connect's
 * handler context holds a call's request and response headers as `Headers`;
 * the service's handlers and interceptors never read the request's (the
 * edge has read the token and the deadline) and write the answer's only on
 * an error, and filling `Headers` (each name and value checked, the names
 * sorted as they are read) cost gRPC calls a fiftieth of their instructions.
 */
abstract class LazyHeaders extends (Headers as unknown as HeadersClass) {
  #filled = false;

  /** What it holds until touched. */
  protected abstract fill(append: (name: string, value: string) => void): void;

  /** Whether nothing has read or written it yet. */
  protected get untouched(): boolean {
    return !this.#filled;
  }

  #touch(): void {
    if (this.#filled) return;
    this.#filled = true;
    this.fill((name, value) => super.append(name, value));
  }

  override append(name: string, value: string): void {
    this.#touch();
    super.append(name, value);
  }
  override delete(name: string): void {
    this.#touch();
    super.delete(name);
  }
  override get(name: string): string | null {
    this.#touch();
    return super.get(name);
  }
  override getSetCookie(): string[] {
    this.#touch();
    return super.getSetCookie();
  }
  override has(name: string): boolean {
    this.#touch();
    return super.has(name);
  }
  override set(name: string, value: string): void {
    this.#touch();
    super.set(name, value);
  }
  override forEach(
    callback: (value: string, key: string, parent: Headers) => void,
    thisArg?: unknown,
  ): void {
    this.#touch();
    super.forEach(callback, thisArg);
  }
  override entries(): ReturnType<Headers["entries"]> {
    this.#touch();
    return super.entries();
  }
  override keys(): ReturnType<Headers["keys"]> {
    this.#touch();
    return super.keys();
  }
  override values(): ReturnType<Headers["values"]> {
    this.#touch();
    return super.values();
  }
  override [Symbol.iterator](): ReturnType<Headers["entries"]> {
    this.#touch();
    return super[Symbol.iterator]();
  }
}

/** A request's headers as Node parsed them, but for the pseudo-headers. */
export class RequestHeaders extends LazyHeaders {
  constructor(private readonly raw: IncomingHttpHeaders) {
    super();
  }

  protected fill(append: (name: string, value: string) => void): void {
    for (const [k, v] of Object.entries(this.raw)) {
      if (k.startsWith(":") || v === undefined) continue;
      if (Array.isArray(v)) for (const e of v) append(k, e);
      else append(k, String(v));
    }
  }
}

/**
 * An answer's headers or trailers, starting as `initial` (one object per
 * kind of answer, never written to): untouched, they are written as that
 * object, with no `Headers` made at all.
 */
export class AnswerHeaders extends LazyHeaders {
  constructor(private readonly initial: Readonly<Record<string, string>>) {
    super();
  }

  protected fill(append: (name: string, value: string) => void): void {
    for (const [k, v] of Object.entries(this.initial)) append(k, v);
  }

  /** As Node takes them: repeated names (set-cookie) as arrays. */
  toNode(): Readonly<Record<string, string | string[]>> {
    return this.untouched ? this.initial : nodeRecord(this);
  }
}

/** Headers as connect-node hands them to Node: repeated names (set-cookie) as arrays. */
export function nodeHeaders(headers: Headers): Readonly<Record<string, string | string[]>> {
  return headers instanceof AnswerHeaders ? headers.toNode() : nodeRecord(headers);
}

function nodeRecord(headers: Headers): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null);
  headers.forEach((value, key) => {
    const existing = out[key];
    if (existing === undefined) out[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else out[key] = [existing, value];
  });
  return out;
}
