import { sql } from "kysely";
import type { Db } from "../db/database.js";
import { isMigrated } from "../db/migrate.js";

/** Probe results are reused for this long: probes and checks can come often. */
const PROBE_CACHE_MS = 1000;
/** A database that takes longer than this to answer `SELECT 1` counts as down. */
const PROBE_TIMEOUT_MS = 500;

export type HealthState = "serving" | "not_serving";

/**
 * What the service can say about itself: whether the database answers
 * (a cached `SELECT 1`), whether migrations are applied, and whether the
 * process is draining. gRPC health, `/readyz` and shutdown all read it, so
 * they never disagree.
 */
export class HealthMonitor {
  #draining = false;
  #probe: { at: number; result: Promise<boolean> } | undefined;
  #listeners = new Set<() => void>();

  constructor(private readonly db: Db) {}

  get draining(): boolean {
    return this.#draining;
  }

  /** From now on the service reports NOT_SERVING; Watch streams hear it at once. */
  startDraining(): void {
    this.#draining = true;
    for (const listener of this.#listeners) listener();
  }

  /** SERVING while not draining and the database answers. */
  async state(): Promise<HealthState> {
    if (this.#draining) return "not_serving";
    return (await this.databaseAnswers()) ? "serving" : "not_serving";
  }

  /** Ready for traffic: serving, and every migration applied. */
  async ready(): Promise<boolean> {
    if ((await this.state()) !== "serving") return false;
    return withTimeout(isMigrated(this.db), PROBE_TIMEOUT_MS).catch(() => false);
  }

  /**
   * Whether `SELECT 1` came back within PROBE_TIMEOUT_MS, at most once per
   * PROBE_CACHE_MS: concurrent callers share one probe.
   */
  databaseAnswers(): Promise<boolean> {
    const now = Date.now();
    if (this.#probe === undefined || now - this.#probe.at >= PROBE_CACHE_MS) {
      const result = withTimeout(sql`SELECT 1`.execute(this.db), PROBE_TIMEOUT_MS).then(
        () => true,
        () => false,
      );
      this.#probe = { at: now, result };
    }
    return this.#probe.result;
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
