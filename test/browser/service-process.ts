import { type ChildProcess, spawn } from "node:child_process";

/**
 * The real service (src/main.ts) in a process of its own, as `npm start`
 * runs it: killed with SIGKILL (no drain, no goodbye) and started again on
 * the same port and the same SQLite file, as a crashed server restarts.
 */
export class ServiceProcess {
  private child: ChildProcess | undefined;
  /** Chosen by the first start (PORT=0), kept by the next ones. */
  port = 0;
  /** What the service printed, for a failure's message. */
  output = "";

  constructor(private readonly env: Record<string, string>) {}

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: {
        ...process.env,
        ...this.env,
        HOST: "127.0.0.1",
        PORT: String(this.port),
        METRICS_PORT: "0",
        LOG_LEVEL: "info",
        NODE_ENV: "production",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.child = child;
    child.stderr?.on("data", (chunk) => {
      this.output += chunk;
    });
    this.port = await new Promise<number>((resolve, reject) => {
      let out = "";
      child.stdout?.on("data", (chunk) => {
        out += chunk;
        this.output += chunk;
        const match = /"port":(\d+)[^\n]*"msg":"listening"/.exec(out);
        if (match) resolve(Number(match[1]));
      });
      child.once("exit", () => reject(new Error(`the service exited:\n${this.output}`)));
    });
  }

  /** SIGKILL, and waits until the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
  }
}
