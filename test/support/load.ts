import { listVia, type Outcome, startVia, TRANSPORTS } from "./reliability.js";
import type { TestService } from "./service.js";

export interface LoadEvent extends Outcome {
  op: "start" | "list";
  /** When the call was made (performance.now()). */
  at: number;
}

export interface Load {
  events: LoadEvent[];
  /** Stops the workers and waits for their last calls. */
  stop(): Promise<LoadEvent[]>;
}

/**
 * `workers` loops, each making one call at a time until stopped: starts and
 * lists by `users` on `quizId`, round-robin over every transport. Bounded:
 * each worker stops after `maxCalls` calls even if never stopped.
 */
export function startLoad(
  svc: TestService,
  options: { users: string[]; quizId: string; workers: number; maxCalls?: number },
): Load {
  const events: LoadEvent[] = [];
  let stopped = false;
  const maxCalls = options.maxCalls ?? 100_000;
  const worker = async (w: number) => {
    for (let i = 0; !stopped && i < maxCalls; i++) {
      const n = w * 7919 + i;
      const user = options.users[n % options.users.length] ?? "load";
      const transport = TRANSPORTS[n % TRANSPORTS.length] ?? "rest";
      const op = n % 3 === 0 ? "start" : "list";
      const at = performance.now();
      const outcome =
        op === "start"
          ? await startVia(svc, transport, user, options.quizId)
          : await listVia(svc, transport, user, options.quizId);
      events.push({ ...outcome, op, at });
    }
  };
  const running = Promise.all(Array.from({ length: options.workers }, (_, w) => worker(w)));
  return {
    events,
    async stop() {
      stopped = true;
      await running;
      return events;
    },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
