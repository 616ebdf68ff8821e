/** Something that holds a connection slot and can give it back at once. */
export interface Held {
  destroy(): void;
  once(event: "close", listener: () => void): unknown;
}

/**
 * The connections that hold a slot of the port without work: accepted and
 * silent, an HTTP/1.1 keep-alive between requests, an HTTP/2 session with
 * no open stream; and, after them, those whose client has stopped reading
 * their answers (edge/unsent-bytes.ts). When the port nears its connection
 * cap, the ones idle longest are closed first, then the stalled ones, as
 * Envoy's overload manager shrinks idle timeouts under pressure: a new
 * caller always gets in, and a connection busy with a call whose client
 * reads is never the one closed.
 */
export class IdleConnections {
  // A Map iterates in insertion order: re-inserting on each idle start keeps it oldest first.
  readonly #idle = new Map<Held, true>();
  readonly #stalled = new Map<Held, true>();
  #closing = 0;

  /** `held` has nothing in progress from now on (again). */
  idle(held: Held): void {
    this.#idle.delete(held);
    this.#idle.set(held, true);
  }

  /** `held` is busy: not idle (it may still be stalled). */
  busy(held: Held): void {
    this.#idle.delete(held);
  }

  /** `held` has closed, or stands for its connection no more: no candidate. */
  gone(held: Held): void {
    this.#idle.delete(held);
    this.#stalled.delete(held);
  }

  /** `held` holds answers its client does not read (`true`), or reads them again. */
  stalled(held: Held, stalled: boolean): void {
    if (stalled) this.#stalled.set(held, true);
    else this.#stalled.delete(held);
  }

  /**
   * Closes connections idle longest until `held` connections, less those
   * already closing, are at most `limit`. A connection closes a turn of the
   * event loop after it is destroyed: counting those still closing keeps a
   * burst of new ones from closing more than it needs.
   */
  closeOldest(held: number, limit: number): void {
    for (const candidates of [this.#idle, this.#stalled]) {
      for (const conn of candidates.keys()) {
        if (held - this.#closing <= limit) return;
        this.gone(conn);
        this.#closing++;
        conn.once("close", () => this.#closing--);
        conn.destroy();
      }
    }
  }
}
