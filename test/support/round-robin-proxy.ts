import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";

/**
 * A TCP balancer on 127.0.0.1: each new connection goes to the next of
 * `targets` in turn, as a layer-4 load balancer or a virtual IP over several
 * database servers does. Thread ids are per server, so two connections
 * through it may carry the same id on different servers.
 */
export class RoundRobinProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private next = 0;
  port = 0;

  /** Where new connections go, in turn; a test may change it (existing ones stay). */
  constructor(public targets: { host: string; port: number }[]) {}

  async start(): Promise<void> {
    const server = createServer((client) => {
      const target = this.targets[this.next++ % this.targets.length] as {
        host: string;
        port: number;
      };
      const upstream = connect(target.port, target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise((resolve) => server.close(resolve));
  }
}
