import { connect, createServer, type Http2Session } from "node:http2";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { SessionTimers } from "../../src/edge/session-timers.js";

// The HTTP/2 sessions' timers (edge/session-timers.ts) on real sessions:
// idle ones closed with GOAWAY, busy ones kept.

// Far beyond the test's own time: only the sweeps the test runs, at the times it gives, close.
const IDLE_MS = 60_000;
let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

async function serverWithTimers() {
  const timers = new SessionTimers(5000, IDLE_MS);
  const sessions: Http2Session[] = [];
  const server = createServer();
  server.on("session", (session) => {
    sessions.push(session);
    timers.watch(session);
  });
  server.on("stream", (stream) => stream.respond({ ":status": 204 }, { endStream: true }));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = async () => {
    timers.stop();
    for (const s of sessions) s.destroy();
    await new Promise((resolve) => server.close(resolve));
  };
  return { timers, sessions, url };
}

async function oneCall(url: string) {
  const client = connect(url);
  client.on("error", () => {});
  await new Promise<void>((resolve) => {
    const req = client.request({ ":path": "/" });
    req.on("response", () => req.resume());
    req.on("close", () => resolve());
    req.end();
  });
  return client;
}

describe("HTTP/2 session timers", () => {
  it("closes a session whose connection has carried nothing for the idle limit, and keeps one that talks", async () => {
    const { timers, sessions, url } = await serverWithTimers();
    const idle = await oneCall(url);
    const busy = await oneCall(url);
    const goaway = new Promise<number>((resolve) => idle.once("goaway", resolve));
    const start = performance.now();
    timers.sweep(start);
    // The busy client calls again before the idle limit; the idle one does not.
    await new Promise<void>((resolve) => {
      const req = busy.request({ ":path": "/" });
      req.on("response", () => req.resume());
      req.on("close", () => resolve());
      req.end();
    });
    timers.sweep(start + IDLE_MS / 2);
    timers.sweep(start + IDLE_MS);
    expect(await goaway).toBe(0);
    expect(sessions.map((s) => s.closed)).toEqual([true, false]);
    idle.destroy();
    busy.destroy();
  });
});
