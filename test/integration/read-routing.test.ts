import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../src/db/connect.js";
import { ReplicaReads } from "../../src/db/read-routing.js";
import { findSessionPage } from "../../src/db/session-page.js";
import { createTestDatabase, type TestDatabase, testStore } from "../support/database.js";
import { insertQuiz, insertSessions } from "../support/fixtures.js";
import { defaultDatabaseLimits } from "../support/settings.js";

/**
 * DATABASE_READ_URL's routing on one server (the replica here is the same
 * server: its position is always reached). A real async replica, lag and
 * read-your-writes: npm run test:cluster.
 */
describe.skipIf(testStore() === "sqlite")("reads routed to a replica", () => {
  let database: TestDatabase;
  let quizId = "";
  const user = "reader";

  beforeAll(async () => {
    database = await createTestDatabase();
    ({ quizId } = await insertQuiz(database.db));
    await insertSessions(database.db, [
      { id: "01900000-0000-7000-8000-000000000001", userId: user, quizId, startedAt: new Date() },
    ]);
  });

  afterAll(async () => {
    await database.drop();
  });

  const page = (db: Parameters<typeof findSessionPage>[0]) =>
    findSessionPage(db, { userId: user, quizId, status: undefined, take: 21, after: undefined });

  it("runs a read on the replica once it has the primary's position", async () => {
    const replica = openDatabase({
      url: database.url,
      poolSize: 2,
      connectTimeoutMs: 2000,
      limits: defaultDatabaseLimits(),
    });
    try {
      const reads = new ReplicaReads(database.db, replica.db);
      expect(await reads.check()).toBe(true);
      const rows = await reads.read(page);
      expect(rows?.map((r) => r.id)).toEqual(["01900000-0000-7000-8000-000000000001"]);
      expect(reads.stats).toEqual({ replica: 1, primaryAfterWait: 0, primaryAfterError: 0 });
    } finally {
      await replica.close();
    }
  });

  it("reads the primary while the replica does not answer, and starts anyway", async () => {
    const url = new URL(database.url);
    url.port = "1"; // nothing listens there
    const replica = openDatabase({
      url: url.toString(),
      poolSize: 2,
      connectTimeoutMs: 500,
      limits: defaultDatabaseLimits(),
    });
    try {
      const reads = new ReplicaReads(database.db, replica.db);
      expect(await reads.check()).toBe(false);
      const rows = await reads.read(page);
      expect(rows).toHaveLength(1);
      expect(reads.stats).toEqual({ replica: 0, primaryAfterWait: 0, primaryAfterError: 1 });
    } finally {
      await replica.close();
    }
  });
});
