/**
 * Waiting requests kept per caller and served across callers in turn (round robin): a caller with
 * a hundred waiting delays another's one by at most one turn. Each entry is in two lists, the
 * whole queue's (oldest to newest) and its caller's, so that adding, removing, taking a caller's
 * oldest or newest and finding the whole queue's oldest are each O(1). Policy (limits, shedding,
 * CoDel) is `Admission`'s; this only keeps the order.
 */
export class FairQueue<T> {
  #size = 0;
  #oldest: Entry<T> | undefined;
  #newest: Entry<T> | undefined;
  /** Callers with waiting entries, in turn order: the first is served next. */
  readonly #callers = new Map<string, Caller<T>>();

  /** Entries waiting. */
  get size(): number {
    return this.#size;
  }

  /** The entry that has waited longest, of any caller. */
  get oldest(): Entry<T> | undefined {
    return this.#oldest;
  }

  /** How many entries `key` has waiting. */
  countOf(key: string): number {
    return this.#callers.get(key)?.count ?? 0;
  }

  /** The caller with the most entries waiting (the first in turn among equals), if any. */
  longest(): { key: string; count: number; oldest: Entry<T> | undefined } | undefined {
    let longest: Caller<T> | undefined;
    for (const caller of this.#callers.values()) {
      if (longest === undefined || caller.count > longest.count) longest = caller;
    }
    return longest;
  }

  /** Adds `item` of caller `key`, waiting since `since`, at the newest end. */
  add(key: string, since: number, item: T): Entry<T> {
    let caller = this.#callers.get(key);
    if (caller === undefined) {
      caller = { key, oldest: undefined, newest: undefined, count: 0 };
      this.#callers.set(key, caller);
    }
    const entry = new Entry(since, item, caller);
    entry.older = this.#newest;
    if (this.#newest) this.#newest.newer = entry;
    else this.#oldest = entry;
    this.#newest = entry;
    entry.olderOfCaller = caller.newest;
    if (caller.newest) caller.newest.newerOfCaller = entry;
    else caller.oldest = entry;
    caller.newest = entry;
    caller.count++;
    this.#size++;
    return entry;
  }

  /** Takes `entry` out; false if it was not waiting (any more). */
  remove(entry: Entry<T>): boolean {
    const { caller } = entry;
    if (entry.older) entry.older.newer = entry.newer;
    else if (this.#oldest === entry) this.#oldest = entry.newer;
    else return false;
    if (entry.newer) entry.newer.older = entry.older;
    else this.#newest = entry.older;
    entry.older = undefined;
    entry.newer = undefined;
    if (entry.olderOfCaller) entry.olderOfCaller.newerOfCaller = entry.newerOfCaller;
    else caller.oldest = entry.newerOfCaller;
    if (entry.newerOfCaller) entry.newerOfCaller.olderOfCaller = entry.olderOfCaller;
    else caller.newest = entry.olderOfCaller;
    entry.olderOfCaller = undefined;
    entry.newerOfCaller = undefined;
    caller.count--;
    if (caller.count === 0) this.#callers.delete(caller.key);
    this.#size--;
    return true;
  }

  /**
   * Takes the next entry: the first caller in turn's oldest (its newest if `newestFirst`); that
   * caller then goes to the back of the turn.
   */
  take(newestFirst: boolean): Entry<T> | undefined {
    const caller = this.#callers.values().next().value;
    if (caller === undefined) return undefined;
    const entry = newestFirst ? caller.newest : caller.oldest;
    if (entry === undefined) return undefined;
    this.remove(entry);
    if (caller.count > 0) {
      this.#callers.delete(caller.key);
      this.#callers.set(caller.key, caller);
    }
    return entry;
  }
}

/** One waiting item: a node of the whole queue's list and of its caller's. */
export class Entry<T> {
  older: Entry<T> | undefined;
  newer: Entry<T> | undefined;
  olderOfCaller: Entry<T> | undefined;
  newerOfCaller: Entry<T> | undefined;

  constructor(
    /** When it joined the queue. */
    readonly since: number,
    readonly item: T,
    readonly caller: Caller<T>,
  ) {}
}

/** One caller's waiting entries, oldest to newest. */
export interface Caller<T> {
  key: string;
  oldest: Entry<T> | undefined;
  newest: Entry<T> | undefined;
  count: number;
}
