import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { connect as netConnect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { MAX_CONNECTIONS, REQUEST_HEAD_TIMEOUT_MS } from "../../src/limits.js";
import { listeningPort, serviceEnv } from "../support/listening.js";
import { sleep } from "../support/load.js";
import { reportFigures } from "../support/reliability.js";

const TLS = { cert: "test/fixtures/tls/cert.pem", key: "test/fixtures/tls/key.pem" };
const ca = readFileSync(TLS.cert);
let child: ChildProcess | undefined;
let dir: string | undefined;

afterAll(() => {
  child?.kill("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** An HTTPS GET /healthz: its status, or the error's code. */
function healthz(port: number): Promise<number | string> {
  return new Promise((resolve) => {
    const req = httpsRequest({ host: "127.0.0.1", port, path: "/healthz", ca, timeout: 3000 });
    req.once("response", (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once("timeout", () => req.destroy(new Error("timeout")));
    req.once("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    req.end();
  });
}

describe("a flood of idle connections on the TLS port", () => {
  it(`${MAX_CONNECTIONS + 50} silent TCP connections: normal HTTPS calls are served again within the head timeout`, async () => {
    // The service in a process of its own: its descriptors and the flood's are counted apart.
    dir = mkdtempSync(join(tmpdir(), "practice-tls-flood-"));
    child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: serviceEnv({
        DATABASE_URL: `sqlite:${join(dir, "db.sqlite")}`,
        NODE_ENV: "production",
        PRACTICE_PAGE: "off",
        TLS_CERT_FILE: TLS.cert,
        TLS_KEY_FILE: TLS.key,
      }),
      stdio: ["ignore", "pipe", "ignore"],
    });
    const port = await listeningPort(child).port;
    expect(await healthz(port)).toBe(200);

    const flood: Socket[] = [];
    const count = MAX_CONNECTIONS + 50;
    for (let i = 0; i < count; i += 500) {
      const batch = Array.from({ length: Math.min(500, count - i) }, () => {
        const socket = netConnect(port, "127.0.0.1");
        socket.on("error", () => {});
        socket.resume();
        return socket;
      });
      await Promise.all(
        batch.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.once("connect", () => resolve());
              s.once("close", () => resolve());
            }),
        ),
      );
      flood.push(...batch);
    }
    const floodDone = performance.now();
    // Served again once the silent connections are dropped at the head timeout.
    let servedAfter: number | undefined;
    const tries: (number | string)[] = [];
    while (performance.now() - floodDone < REQUEST_HEAD_TIMEOUT_MS + 5_000) {
      const status = await healthz(port);
      tries.push(status);
      if (status === 200) {
        servedAfter = performance.now() - floodDone;
        break;
      }
      await sleep(250);
    }
    // Every silent connection closed by the service, the last ones within the head timeout.
    await sleep(Math.max(0, REQUEST_HEAD_TIMEOUT_MS + 2_000 - (performance.now() - floodDone)));
    const stillOpen = flood.filter((s) => !s.destroyed && !s.readableEnded).length;
    reportFigures(`${flood.length} silent connections on the TLS port`, {
      servedAfterMs: servedAfter && Math.round(servedAfter),
      tries: tries.length,
      stillOpen,
    });
    for (const s of flood) s.destroy();
    expect(servedAfter).toBeDefined();
    expect(servedAfter as number).toBeLessThan(REQUEST_HEAD_TIMEOUT_MS + 2_000);
    expect(stillOpen).toBe(0);
  }, 120_000);
});
