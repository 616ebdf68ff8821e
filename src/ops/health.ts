import type { Db } from "../db/database.js";
import { isMigrated } from "../db/migrate.js";
import { checkServingOn } from "../db/serving-check.js";

/**
 * The database is probed this often in the background, whoever asks: an
 * answer is never older than this plus PROBE_TIMEOUT_MS.
 */
const PROBE_INTERVAL_MS = 500;
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
 * start-up, or the first question; a "no" again every few seconds), and the
 * database is probed every PROBE_INTERVAL_MS on a timer of its own, started
 * by `start()` or the first question, so the answer after a quiet spell is as
 * fresh as any. A question is answered from the last result without waiting
 * (only the very first waits for a probe): a flood of `/readyz` costs no
 * database work. The timer does not keep the process alive and stops when
 * the service drains.
 */
export class HealthMonitor {
  #draining = false;
  #migrated: Promise<boolean> | undefined;
  #migratedNo = false;
  #checkedAt = 0;
  #answers: boolean | undefined;
  #probing: Promise<boolean> | undefined;
  #timer: NodeJS.Timeout | undefined;
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
    this.stop();
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

  /** Starts probing the database in the background (the first question does too). */
  start(): void {
    if (this.#timer !== undefined || this.#draining) return;
    this.#runProbe();
    this.#timer = setInterval(() => this.#runProbe(), PROBE_INTERVAL_MS);
    this.#timer.unref();
  }

  /** Stops the background probes (draining does too). */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Whether the database answered its last probe within PROBE_TIMEOUT_MS.
   * Waits only for the very first probe.
   */
  databaseAnswers(): Promise<boolean> {
    this.start();
    if (this.#answers !== undefined) return Promise.resolve(this.#answers);
    return this.#probing ?? Promise.resolve(false);
  }

  /** One probe at a time: a database slower than the interval is not asked twice at once. */
  #runProbe(): void {
    if (this.#probing !== undefined) return;
    const probing = withTimeout(this.#probe(), PROBE_TIMEOUT_MS).then(
      () => true,
      () => false,
    );
    this.#probing = probing;
    void probing.then((answers) => {
      this.#answers = answers;
      this.#probing = undefined;
    });
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
