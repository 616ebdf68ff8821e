import type { Logger } from "pino";

/**
 * A signal this soon after the last one counted is the same signal twice:
 * a terminal's Ctrl-C reaches npm and node both, and npm forwards it to node
 * within milliseconds; `kill` of a process group does the same. A person
 * pressing again takes longer than this.
 */
export const DUPLICATE_WINDOW_MS = 100;

export interface StopOptions {
  logger: Logger;
  /** Past this, the process exits with 1 whatever the drain or the start-up is doing. */
  forceAfterMs: number;
}

/**
 * What the service does on a stop. Until `serve`, a stop ends the start-up
 * at its next `checkpoint` (or at once, inside `until`); after it, a stop
 * drains.
 */
export interface Stop {
  /** Aborted at the first stop. */
  readonly signal: AbortSignal;
  /** Runs `close` when a stop ends the start-up (last added, first run). */
  closeOnStop(close: () => Promise<unknown> | undefined): void;
  /** If a stop was asked: closes what start-up opened and exits 0. */
  checkpoint(): Promise<void>;
  /** Resolves with `work`, or ends the start-up as `checkpoint` does if a stop comes first. */
  until<T>(work: Promise<T>): Promise<T>;
  /**
   * From now on a stop runs `drain`: it resolves once everything is closed,
   * with false if it had to cut what did not finish in time (the exit is
   * then 1). A stop asked before this drains at once.
   */
  serve(options: { drain: () => Promise<boolean> }): void;
}

/**
 * One stop, whatever the signal. Install it first thing, before anything
 * waits, so a stop during the database wait, migrations or the page build is
 * as clean as one while serving:
 * - the first SIGTERM or SIGINT stops (start-up ends, or the drain starts,
 *   then the exit is 0, or 1 if the drain had to cut calls short);
 * - a signal within DUPLICATE_WINDOW_MS of the last one counted is the same
 *   one (npm's forwarding, a process group);
 * - the third signal counted since the first forces the exit at once, with 1,
 *   however far apart they are, and so does a stop that passes `forceAfterMs`.
 * Once serving, an uncaught error drains too, then exits 1.
 */
export function stopOnSignals({ logger, forceAfterMs }: StopOptions): Stop {
  const stopped = new AbortController();
  const closers: (() => Promise<unknown> | undefined)[] = [];
  let drain: (() => Promise<boolean>) | undefined;
  let exitCode = 0;
  let draining = false;
  let counted = 0;
  let lastCountedAt = Number.NEGATIVE_INFINITY;
  let endingStart: Promise<never> | undefined;

  let forcing = false;
  const forceLater = () => {
    if (forcing) return;
    forcing = true;
    const force = setTimeout(() => {
      logger.error({ forceAfterMs }, "shutdown took too long: exiting");
      process.exit(1);
    }, forceAfterMs);
    force.unref();
  };

  const startDrain = (run: () => Promise<boolean>) => {
    if (draining) return;
    draining = true;
    run().then(
      (finished) => process.exit(finished ? exitCode : 1),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };

  const endStart = (): Promise<never> => {
    endingStart ??= (async () => {
      for (const close of closers.reverse()) {
        try {
          await close();
        } catch (err) {
          logger.warn({ err }, "closing after a stop during start-up failed");
        }
      }
      logger.info("stopped before it started");
      process.exit(0);
    })();
    return endingStart;
  };

  const onSignal = (signal: NodeJS.Signals) => {
    const now = performance.now();
    if (now - lastCountedAt < DUPLICATE_WINDOW_MS) return;
    lastCountedAt = now;
    counted++;
    if (counted === 1) {
      logger.info({ signal, starting: drain === undefined }, "shutting down");
      forceLater();
      stopped.abort(new Error(`stopped by ${signal}`));
      if (drain !== undefined) startDrain(drain);
    } else if (counted === 2) {
      logger.warn({ signal }, "already shutting down: one more signal forces the exit");
    } else {
      logger.error({ signal }, "forced exit");
      process.exit(1);
    }
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);

  return {
    signal: stopped.signal,
    closeOnStop(close) {
      closers.push(close);
    },
    async checkpoint() {
      if (stopped.signal.aborted && drain === undefined) await endStart();
    },
    async until<T>(work: Promise<T>): Promise<T> {
      if (stopped.signal.aborted) await endStart();
      let onAbort = () => {};
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(stopped.signal.reason);
        stopped.signal.addEventListener("abort", onAbort, { once: true });
      });
      aborted.catch(() => {});
      try {
        return await Promise.race([work, aborted]);
      } catch (err) {
        if (stopped.signal.aborted) await endStart();
        throw err;
      } finally {
        stopped.signal.removeEventListener("abort", onAbort);
      }
    },
    serve({ drain: run }) {
      drain = run;
      const onError = (err: unknown) => {
        logger.error({ err }, "uncaught error: shutting down");
        exitCode = 1;
        forceLater();
        startDrain(run);
      };
      process.on("uncaughtException", onError);
      process.on("unhandledRejection", onError);
      if (stopped.signal.aborted) startDrain(run);
    },
  };
}
