/** Something that holds a connection slot and can give it back at once. */
export interface Held {
  destroy(): void;
}

/**
 * The connections that hold a slot of the port without work: accepted and
 * silent, an HTTP/1.1 keep-alive between requests, an HTTP/2 session with
 * no open stream. When the port nears its connection cap, the ones idle
 * longest are closed first, as Envoy's overload manager shrinks idle
 * timeouts under pressure: a new caller always gets in, and a connection
 * busy with a call is never the one closed.
 */
export class IdleConnections {
  // A Map iterates in insertion order: re-inserting on each idle start keeps it oldest first.
  readonly #idle = new Map<Held, true>();

  /** `held` has nothing in progress from now on (again). */
  idle(held: Held): void {
    this.#idle.delete(held);
    this.#idle.set(held, true);
  }

  /** `held` is busy, or gone: not a candidate for closing. */
  busy(held: Held): void {
    this.#idle.delete(held);
  }

  /** Closes up to `count` of the connections idle longest; resolves how many it closed. */
  closeOldest(count: number): number {
    let closed = 0;
    for (const held of this.#idle.keys()) {
      if (closed >= count) break;
      this.#idle.delete(held);
      held.destroy();
      closed++;
    }
    return closed;
  }

  get size(): number {
    return this.#idle.size;
  }
}
