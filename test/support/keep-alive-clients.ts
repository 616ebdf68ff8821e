import { Agent, request as http1Request } from "node:http";

/**
 * 8 HTTP/1.1 keep-alive clients, each looping GET /healthz on its own
 * connection until `stop()`: how many answers, and how many resets.
 */
export function keepAliveClients(port: number) {
  const tally = { answers: 0, resets: 0, refused: 0, other: 0 };
  let running = true;
  const loops = Array.from({ length: 8 }, async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    while (running) {
      await new Promise<void>((resolve) => {
        const req = http1Request({ host: "127.0.0.1", port, path: "/healthz", agent }, (res) => {
          res.resume().on("end", () => {
            tally.answers++;
            resolve();
          });
        });
        req.on("error", (err: NodeJS.ErrnoException) => {
          if (err.code === "ECONNRESET") tally.resets++;
          else if (err.code === "ECONNREFUSED") tally.refused++;
          else tally.other++;
          // Refused: the port is closed, the stop is under way; stop looping.
          if (err.code === "ECONNREFUSED") running = false;
          resolve();
        });
        req.end();
      });
    }
    agent.destroy();
  });
  return {
    tally,
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}
