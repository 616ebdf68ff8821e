import { readFileSync } from "node:fs";
import { connect as http2Connect } from "node:http2";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { type AddressInfo, connect as netConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { signToken } from "../../src/auth/tokens.js";
import { systemClock } from "../../src/domain/clock.js";
import { type OnePortServer, servePort } from "../../src/edge/one-port.js";
import { REQUEST_HEAD_TIMEOUT_MS } from "../../src/limits.js";
import { buildApp } from "../../src/server.js";
import { createTestDatabase, type TestDatabase, testStore } from "../support/database.js";
import { TEST_SECRET } from "../support/service.js";
import { defaultAppSettings } from "../support/settings.js";

/** A self-signed certificate for localhost and 127.0.0.1 (test only). */
const TLS = { certFile: "test/fixtures/tls/cert.pem", keyFile: "test/fixtures/tls/key.pem" };
const ca = readFileSync(TLS.certFile);

// The edge is the same whatever the store: SQLite only.
const edge = describe.skipIf(testStore() === "mysql");

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

async function serve(
  tls: boolean,
  requestTimeoutMs?: number,
): Promise<{ port: OnePortServer; portNumber: number }> {
  const defaults = defaultAppSettings();
  const app = await buildApp({
    ...defaults,
    requestTimeoutMs: requestTimeoutMs ?? defaults.requestTimeoutMs,
    db: database.db,
    clock: systemClock,
    authenticator: createAuthenticator({ secret: TEST_SECRET }, systemClock),
    logger: pino({ level: "silent" }),
  });
  const port = servePort(app, { tls: tls ? TLS : undefined });
  await port.listen(0, "127.0.0.1");
  return { port, portNumber: (port.server.address() as AddressInfo).port };
}

/** Resolves with how long after `since` the socket was closed by the server. */
function closedAfter(socket: Socket, since: number): Promise<number> {
  return new Promise((resolve) => {
    socket.on("error", () => {});
    socket.resume();
    socket.once("close", () => resolve(performance.now() - since));
  });
}

/** Within the head timeout, plus Node's 1 s connection-checking interval and slack. */
const CUT_WITHIN_MS = REQUEST_HEAD_TIMEOUT_MS + 2_000;

edge.each([
  ["TLS", true],
  ["cleartext", false],
])("every way in is cut at the head timeout (%s)", (_name, tls) => {
  let port: OnePortServer;
  let portNumber: number;
  beforeAll(async () => {
    ({ port, portNumber } = await serve(tls));
  });
  afterAll(async () => {
    await port?.close(500);
  });

  it("closes a connection that never sends a byte", async () => {
    const t0 = performance.now();
    const socket = netConnect(portNumber, "127.0.0.1");
    const ms = await closedAfter(socket, t0);
    expect(ms).toBeGreaterThan(REQUEST_HEAD_TIMEOUT_MS - 500);
    expect(ms).toBeLessThan(CUT_WITHIN_MS);
  });

  it.runIf(tls)("closes a connection whose handshake is done and then says nothing", async () => {
    const t0 = performance.now();
    const socket = tlsConnect({ port: portNumber, host: "127.0.0.1", ca, ALPNProtocols: ["h2"] });
    await new Promise((resolve) => socket.once("secureConnect", resolve));
    expect(await closedAfter(socket, t0)).toBeLessThan(CUT_WITHIN_MS);
  });

  it("closes a connection that sends half a request head", async () => {
    const t0 = performance.now();
    const socket = tls
      ? tlsConnect({ port: portNumber, host: "127.0.0.1", ca, ALPNProtocols: ["http/1.1"] })
      : netConnect(portNumber, "127.0.0.1");
    socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\n");
    expect(await closedAfter(socket, t0)).toBeLessThan(CUT_WITHIN_MS);
  });
});

edge("a drain over TLS", () => {
  it("closes idle and busy HTTP/1.1 keep-alives and HTTP/2 sessions with Connection: close, no reset, within 3 s", async () => {
    const { port, portNumber } = await serve(true);
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1, ca });
    const get = () =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const req = httpsRequest(
          { host: "127.0.0.1", port: portNumber, path: "/healthz", agent, ca },
          (res) => {
            res
              .resume()
              .once("end", () =>
                resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }),
              );
          },
        );
        req.once("error", reject);
        req.end();
      });
    // One idle keep-alive (answered once, then quiet), one busy (loops).
    const idleAgent = new HttpsAgent({ keepAlive: true, maxSockets: 1, ca });
    await new Promise<void>((resolve, reject) => {
      httpsRequest({ host: "127.0.0.1", port: portNumber, path: "/healthz", agent: idleAgent, ca })
        .once("response", (res) => res.resume().once("end", resolve))
        .once("error", reject)
        .end();
    });
    const h2 = http2Connect(`https://127.0.0.1:${portNumber}`, { ca });
    await new Promise<void>((resolve, reject) => {
      const stream = h2.request({ ":path": "/healthz" });
      stream.once("response", () => stream.resume().once("end", resolve));
      stream.once("error", reject);
      stream.end();
    });
    let running = true;
    const answers: { status: number; connection: string | undefined }[] = [];
    const errors: unknown[] = [];
    const busy = (async () => {
      while (running) {
        try {
          answers.push(await get());
        } catch (err) {
          errors.push(err);
          return;
        }
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const t0 = performance.now();
    const cut = await port.close(10_000);
    const ms = performance.now() - t0;
    running = false;
    await busy;
    h2.destroy();
    agent.destroy();
    idleAgent.destroy();
    expect(cut).toBe(0);
    expect(ms).toBeLessThan(3_000);
    expect(answers.at(-1)?.connection).toBe("close");
    expect(errors.filter((e) => (e as NodeJS.ErrnoException).code === "ECONNRESET")).toEqual([]);
  });
});

edge("a stalled request body gets exactly one answer", () => {
  it("answers once, then closes the connection", async () => {
    // The call's deadline passes while the body is still awaited, before Node's own
    // limit on reading a request (which answers 408), and well within the
    // keep-alive timeout that would close the connection by itself.
    const { port, portNumber } = await serve(false, 3_000);
    const token = await signToken(TEST_SECRET, "stalled");
    try {
      const socket = netConnect(portNumber, "127.0.0.1");
      let received = "";
      socket.on("data", (chunk: Buffer) => {
        received += chunk.toString("latin1");
      });
      socket.write(
        `POST /quizzes/1/sessions HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: 10\r\n\r\n{`,
      );
      await closedAfter(socket, performance.now());
      const statusLines = received.match(/^HTTP\/1\.1 \d+/gm) ?? [];
      expect(statusLines).toEqual(["HTTP/1.1 504"]);
    } finally {
      await port.close(500);
    }
  });
});

edge("a request's read limit follows the longest a call may take", () => {
  /** Beyond the 10 s a request could take to arrive whatever calls were allowed. */
  const SLOW_MS = 11_000;

  it("with calls of up to 30 s, a body that takes 11 s is read and answered, over HTTP/1.1 and HTTP/2", async () => {
    const { port, portNumber } = await serve(false, 30_000);
    const token = await signToken(TEST_SECRET, "slow-body");
    const headers = `authorization: Bearer ${token}\r\ncontent-type: application/json\r\n`;
    try {
      const http1 = (async () => {
        const socket = netConnect(portNumber, "127.0.0.1");
        let received = "";
        socket.on("data", (chunk: Buffer) => {
          received += chunk.toString("latin1");
        });
        socket.write(
          `POST /quizzes/no-such-quiz/sessions HTTP/1.1\r\nhost: x\r\n${headers}content-length: 2\r\n\r\n{`,
        );
        await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
        socket.write("}");
        await expect.poll(() => received, { timeout: 5_000 }).toMatch(/^HTTP\/1\.1 \d+/);
        socket.destroy();
        return received.match(/^HTTP\/1\.1 (\d+)/)?.[1];
      })();
      const http2 = (async () => {
        const session = http2Connect(`http://127.0.0.1:${portNumber}`);
        session.on("error", () => {});
        const stream = session.request({
          ":method": "POST",
          ":path": "/quizzes/no-such-quiz/sessions",
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
        });
        stream.on("error", () => {});
        stream.write("{");
        await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
        const status = new Promise<number | string>((resolve) => {
          stream.once("response", (h) => resolve(Number(h[":status"])));
          stream.once("close", () => resolve(`closed (${stream.rstCode})`));
        });
        stream.end("}");
        const answer = await status;
        session.destroy();
        return answer;
      })();
      // The quiz does not exist: an answer from the route, not a cut-off.
      expect(await http1).toBe("404");
      expect(await http2).toBe(404);
    } finally {
      await port.close(500);
    }
  }, 30_000);
});

edge("an answer at the deadline while the request still arrives", () => {
  it("ends the HTTP/2 stream with it (RST_STREAM NO_ERROR), over gRPC and REST, not at the read limit", async () => {
    const { port, portNumber } = await serve(false, 1_000);
    const token = await signToken(TEST_SECRET, "stalled-h2");
    const session = http2Connect(`http://127.0.0.1:${portNumber}`);
    session.on("error", () => {});
    /** A request whose body never ends: its answer's status, and how its stream was closed. */
    const unfinished = (headers: Record<string, string>) =>
      new Promise<{ status: string | undefined; rstCode: number | undefined }>((resolve) => {
        const stream = session.request({
          ":method": "POST",
          authorization: `Bearer ${token}`,
          ...headers,
        });
        let status: string | undefined;
        stream.on("error", () => {});
        stream.once("response", (h) => {
          status = String(h["grpc-status"] ?? h[":status"]);
        });
        stream.resume();
        stream.once("close", () => resolve({ status, rstCode: stream.rstCode }));
        stream.write(Buffer.from([0, 0, 0, 1, 0]));
      });
    try {
      const [grpc, rest] = await Promise.all([
        unfinished({
          ":path": "/practice.v1.PracticeSessionService/ListSessions",
          "content-type": "application/grpc",
          te: "trailers",
        }),
        unfinished({ ":path": "/quizzes/1/sessions", "content-type": "application/json" }),
      ]);
      // DEADLINE_EXCEEDED and 504, then NO_ERROR: ended with the answer, not CANCEL at the read limit.
      expect(grpc).toEqual({ status: "4", rstCode: 0 });
      expect(rest).toEqual({ status: "504", rstCode: 0 });
    } finally {
      session.destroy();
      await port.close(500);
    }
  });
});
