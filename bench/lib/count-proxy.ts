import { createConnection, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP proxy in front of MySQL/MariaDB that counts the commands clients send
 * (client packets with sequence id 0: COM_QUERY, COM_STMT_EXECUTE, ...), so
 * round trips per request are exact even when other clients load the server.
 * COM_QUIT (0x01) is not counted.
 */
export class CommandCountingProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  commands = 0;
  port = 0;

  constructor(
    private readonly host: string,
    private readonly targetPort: number,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = createConnection(this.targetPort, this.host);
      this.sockets.add(client);
      this.sockets.add(upstream);
      let pending: Buffer = Buffer.alloc(0);
      client.on("data", (chunk: Buffer) => {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        while (pending.length >= 5) {
          const len = pending.readUIntLE(0, 3);
          if (pending.length < 4 + len) break;
          if (pending[3] === 0 && pending[4] !== 0x01) this.commands++;
          pending = pending.subarray(4 + len);
        }
        upstream.write(chunk);
      });
      upstream.pipe(client);
      const close = () => {
        client.destroy();
        upstream.destroy();
        this.sockets.delete(client);
        this.sockets.delete(upstream);
      };
      client.on("error", close).on("close", close);
      upstream.on("error", close).on("close", close);
    });
    await new Promise<void>((resolve) => this.server?.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    this.port = typeof address === "object" && address ? address.port : 0;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
