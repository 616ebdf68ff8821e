import { type Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, expect } from "vitest";
import { PracticeSessions } from "../../src/app/practice-sessions.js";
import { FakeClock } from "../../src/domain/clock.js";
import { createTestDatabase, type TestDatabase } from "./database.js";

/** What a use-case test works with: the use cases on a fresh database and a fake clock. */
export interface UseCaseWorld {
  database: TestDatabase;
  db: TestDatabase["db"];
  clock: FakeClock;
  sessions: PracticeSessions;
}

/**
 * Registers hooks that give the current file a UseCaseWorld: PracticeSessions
 * called directly (no transport) on in-memory SQLite (the sqlite project) or
 * a fresh MySQL database (the mysql project), with a clock that moves only
 * when told. Read its fields inside tests, after beforeAll has run.
 */
export function useCaseWorld(): UseCaseWorld {
  const world = {} as UseCaseWorld;
  beforeAll(async () => {
    world.database = await createTestDatabase();
    world.db = world.database.db;
    world.clock = new FakeClock(new Date("2026-11-01T12:00:00.000Z"));
    world.sessions = new PracticeSessions(world.db, world.clock);
  });
  afterAll(async () => {
    await world.database?.drop();
  });
  return world;
}

/** Awaits `promise`, expecting a ConnectError with `code`; returns it. */
export async function rejection(promise: Promise<unknown>, code: Code): Promise<ConnectError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConnectError);
  const connectError = err as ConnectError;
  expect(connectError.code).toBe(code);
  return connectError;
}

let users = 0;
/** A user id no other test of the file uses. */
export const newUser = (): string => `user-${++users}`;
