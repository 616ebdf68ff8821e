import type { Db } from "../db/database.js";
import { isMigrated } from "../db/migrate.js";
import { checkServingOn } from "../db/serving-check.js";

/** The database is probed at most this often, however often anybody asks. */
const PROBE_INTERVAL_MS = 1000;
/** A database that takes longer than this to answer the probe counts as down. */
const PROBE_TIMEOUT_MS = 500;

/** A "not migrated" answer is checked again at most this often. */
const MIGRATION_RECHECK_MS = 5000;

export type HealthState = "serving" | "not_serving";

export interface HealthOptions {
  /**
   * Asks the database whether it can serve (resolves) or not (rejects;
   * db/serving-check.ts): on a connection of its own, so a busy users' pool
   * does not make the replica look down and probes take nothing from users.
   * Default: the same check on `db`.
   */
  probe?: () => Promise<unknown>;
}

/**
 * What the service can say about itself: whether the database answers,
 * whether migrations are applied, and whether the process is draining.
 * gRPC health, `/readyz` and shutdown all read it, so they never disagree.
 *
 * Everything is cached: migrations are checked once (`checkMigrations()` at
 * start-up, or the first question; a "no" again every few seconds), the database is probed at most once per
 * PROBE_INTERVAL_MS in the background, and a question is answered from the
 * last result without waiting (only the very first waits for a probe). A
 * flood of `/readyz` therefore costs no database work.
 */
export class HealthMonitor {
  #draining = false;
  #migrated: Promise<boolean> | undefined;
  #migratedNo = false;
  #checkedAt = 0;
  #answers: boolean | undefined;
  #probing: Promise<boolean> | undefined;
  #probedAt = Number.NEGATIVE_INFINITY;
  #listeners = new Set<() => void>();
  readonly #drain = new AbortController();
  readonly #probe: () => Promise<unknown>;

  constructor(
    private readonly db: Db,
    options: HealthOptions = {},
  ) {
    this.#probe = options.probe ?? (() => checkServingOn(db));
  }

  get draining(): boolean {
    return this.#draining;
  }

  /** Aborts when the service starts draining: long streams end then. */
  get drainSignal(): AbortSignal {
    return this.#drain.signal;
  }

  /** From now on the service reports NOT_SERVING; Watch streams hear it at once. */
  startDraining(): void {
    this.#draining = true;
    for (const listener of this.#listeners) listener();
    this.#drain.abort();
  }

  /**
   * Whether every migration is applied (a query of information_schema on
   * MySQL: never per request). Call at start-up. A "yes" is kept for good;
   * a "no" is asked again at most every MIGRATION_RECHECK_MS, so a replica
   * that starts before a separate migration job (MIGRATE_ON_START=false)
   * becomes ready once the job is done.
   */
  checkMigrations(): Promise<boolean> {
    const now = performance.now();
    if (
      this.#migrated === undefined ||
      (this.#migratedNo && now - this.#checkedAt >= MIGRATION_RECHECK_MS)
    ) {
      this.#checkedAt = now;
      this.#migrated = withTimeout(isMigrated(this.db), 10 * PROBE_TIMEOUT_MS)
        .catch(() => false)
        .then((applied) => {
          this.#migratedNo = !applied;
          return applied;
        });
    }
    return this.#migrated;
  }

  /** SERVING while not draining and the database answers. */
  async state(): Promise<HealthState> {
    if (this.#draining) return "not_serving";
    return (await this.databaseAnswers()) ? "serving" : "not_serving";
  }

  /** Ready for traffic: serving, and every migration applied (as checked at start-up). */
  async ready(): Promise<boolean> {
    if ((await this.state()) !== "serving") return false;
    return this.checkMigrations();
  }

  /**
   * Whether the database answered its last probe within PROBE_TIMEOUT_MS.
   * Starts a new probe when the last one is older than PROBE_INTERVAL_MS
   * (one at a time) but waits for it only if there was none before.
   */
  databaseAnswers(): Promise<boolean> {
    const now = performance.now();
    if (this.#probing === undefined && now - this.#probedAt >= PROBE_INTERVAL_MS) {
      this.#probedAt = now;
      this.#probing = withTimeout(this.#probe(), PROBE_TIMEOUT_MS).then(
        () => true,
        () => false,
      );
      void this.#probing.then((answers) => {
        this.#answers = answers;
        this.#probing = undefined;
      });
    }
    if (this.#answers !== undefined) return Promise.resolve(this.#answers);
    return this.#probing ?? Promise.resolve(false);
  }

  /**
   * Calls `listener` on a state change that does not wait for a probe
   * (draining); returns the function that stops it.
   */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
