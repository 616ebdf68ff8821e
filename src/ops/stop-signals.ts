import type { Logger } from "pino";

/** Signals that arrive within this long of the previous one are the same stop (npm forwards them). */
export const REPEAT_WINDOW_MS = 1000;

export interface StopOptions {
  logger: Logger;
  /** The drain: resolves once everything is closed. */
  drain: () => Promise<void>;
  /** Past this, the process exits with 1 whatever the drain is doing. */
  forceAfterMs: number;
}

/**
 * One stop, whatever the signal: the first SIGTERM or SIGINT starts the
 * drain, then the process exits 0. A signal within REPEAT_WINDOW_MS of the
 * previous one is the same stop: a terminal's Ctrl-C, systemd and `docker
 * stop` signal the whole process group, and npm forwards the signal to node,
 * which then gets it twice. A third distinct signal, or a drain that passes
 * `forceAfterMs`, exits at once with 1. An uncaught error drains too, then
 * exits 1.
 */
export function stopOnSignals({ logger, drain, forceAfterMs }: StopOptions): void {
  let signals = 0;
  let lastAt = Number.NEGATIVE_INFINITY;
  let stopping = false;

  const stop = (code: number) => {
    if (stopping) return;
    stopping = true;
    const force = setTimeout(() => {
      logger.error({ forceAfterMs }, "shutdown took too long: exiting");
      process.exit(1);
    }, forceAfterMs);
    force.unref();
    drain().then(
      () => process.exit(code),
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };

  const onSignal = (signal: NodeJS.Signals) => {
    const now = performance.now();
    const repeat = now - lastAt < REPEAT_WINDOW_MS;
    lastAt = now;
    if (repeat) return;
    signals++;
    if (signals === 1) {
      logger.info({ signal }, "shutting down");
      stop(0);
    } else if (signals === 2) {
      logger.warn({ signal }, "already shutting down: one more signal forces the exit");
    } else {
      logger.error({ signal }, "forced exit");
      process.exit(1);
    }
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  const onError = (err: unknown) => {
    logger.error({ err }, "uncaught error: shutting down");
    stop(1);
  };
  process.on("uncaughtException", onError);
  process.on("unhandledRejection", onError);
}
