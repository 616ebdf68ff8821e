import type { AddressInfo } from "node:net";
import { connect, createServer, type Server, type Socket } from "node:net";
import { testServerUrl } from "./database.js";

/**
 * A TCP proxy on 127.0.0.1 to a target port, which a test can cut (drop every
 * connection and refuse new ones) and restore: a database outage without
 * stopping the shared database server.
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  /** While partitioned, bytes wait here (as TCP would retransmit them) until `heal()`. */
  private held: (() => void)[] | undefined;
  /** Bytes that freeze the connection carrying them (see `freezeOn`). */
  private freezePattern: Buffer | undefined;
  /** Bytes that slow the connection carrying them, and by how much (see `slowOn`). */
  private slowPattern: { bytes: Buffer; delayMs: number } | undefined;
  /** Bytes the client sends that reach the server as others (see `replaceOn`). */
  private replacement: { from: Buffer; to: Buffer } | undefined;
  /** Connections frozen so far. */
  frozen = 0;
  /** Patterns counted in what clients send (see `count`), and how often each was seen. */
  private readonly counted = new Map<string, { bytes: Buffer; seen: number }>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = 0): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      let frozen = false;
      let delayMs = 0;
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {
          // A frozen connection's server side never hears of the client's end.
          if (frozen && s === client) return;
          client.destroy();
          upstream.destroy();
        });
      }
      const forward = (from: Socket, to: Socket) => {
        from.on("data", (chunk: Buffer) => {
          if (frozen) return;
          if (from === client) {
            for (const c of this.counted.values()) if (chunk.includes(c.bytes)) c.seen++;
          }
          if (from === client && this.freezePattern && chunk.includes(this.freezePattern)) {
            frozen = true;
            this.frozen++;
            this.freezePattern = undefined;
            return;
          }
          if (from === client && this.slowPattern && chunk.includes(this.slowPattern.bytes)) {
            delayMs = this.slowPattern.delayMs;
            this.slowPattern = undefined;
          }
          const bytes = from === client ? this.replaced(chunk) : chunk;
          if (this.held) this.held.push(() => to.write(bytes));
          else if (delayMs > 0) setTimeout(() => to.write(bytes), delayMs);
          else to.write(bytes);
        });
        from.on("end", () => {
          if (!frozen) to.end();
        });
      };
      forward(client, upstream);
      forward(upstream, client);
    });
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  /** Drops every open connection and stops listening. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise((resolve) => server.close(resolve));
  }

  /**
   * A network partition: connections stay open and new ones are accepted,
   * but no byte gets through either way until `heal()`, which delivers them
   * in order. The database seems to hang, not to be down.
   */
  partition(): void {
    this.held ??= [];
  }

  /**
   * A partition of one connection: the next connection whose client sends
   * bytes containing `pattern` freezes. Those bytes and all later ones are
   * lost both ways, and the server side stays open even when the client
   * closes: the database keeps that session (and its transaction's locks)
   * as if the network had dropped it. `cut()` ends it.
   */
  freezeOn(pattern: string): void {
    this.freezePattern = Buffer.from(pattern);
  }

  /**
   * A slow link for one connection: the next connection whose client sends
   * bytes containing `pattern` delivers those bytes and all later ones, both
   * ways and in order, `delayMs` late.
   */
  slowOn(pattern: string, delayMs: number): void {
    this.slowPattern = { bytes: Buffer.from(pattern), delayMs };
  }

  /**
   * How many chunks clients have sent holding `pattern` since the first call
   * with it (0 then): what the server was asked, seen on the wire.
   */
  count(pattern: string): number {
    let c = this.counted.get(pattern);
    if (c === undefined) {
      c = { bytes: Buffer.from(pattern, "latin1"), seen: 0 };
      this.counted.set(pattern, c);
    }
    return c.seen;
  }

  /**
   * A proxy that rewrites what clients send, on every connection from now on: each
   * occurrence of `from` within one read reaches the server as `to` (as long: a MySQL
   * packet's length stays right), as a proxy that forces a session setting does.
   */
  replaceOn(from: string, to: string): void {
    const bytes = { from: Buffer.from(from), to: Buffer.from(to) };
    if (bytes.from.length !== bytes.to.length) throw new Error("replaceOn needs equal lengths");
    this.replacement = bytes;
  }

  private replaced(chunk: Buffer): Buffer {
    const r = this.replacement;
    if (r === undefined) return chunk;
    let at = chunk.indexOf(r.from);
    if (at < 0) return chunk;
    const out = Buffer.from(chunk);
    while (at >= 0) {
      r.to.copy(out, at);
      at = out.indexOf(r.from, at + r.to.length);
    }
    return out;
  }

  heal(): void {
    const held = this.held ?? [];
    this.held = undefined;
    for (const deliver of held) deliver();
  }

  /** Listens again on the same port. */
  async restore(): Promise<void> {
    await this.start(this.port);
  }
}

/** A started proxy to the tests' MySQL server, and the URL of its `mysql` schema through it. */
export async function proxyToTestServer(): Promise<{ proxy: TcpProxy; url: string }> {
  const server = new URL(testServerUrl());
  const proxy = new TcpProxy(server.hostname, Number(server.port || 3306));
  await proxy.start();
  return { proxy, url: `mysql://root@127.0.0.1:${proxy.port}/mysql` };
}
