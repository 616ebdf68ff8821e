import type { Migration, MigrationProvider } from "kysely";
import type { Store } from "../connect.js";
import * as mysqlInitial from "./mysql/0001-initial.js";
import * as mysqlUserIdNoPad from "./mysql/0002-user-id-no-pad.js";
import * as mysqlAnsweredQuestions from "./mysql/0003-answered-questions.js";
import * as mysqlOutbox from "./mysql/0004-outbox.js";
import * as mysqlQuestionMemory from "./mysql/0005-question-memory.js";
import * as mysqlOutboxTrace from "./mysql/0006-outbox-trace.js";
import * as mysqlMissedMode from "./mysql/0007-missed-mode.js";
import * as sqliteInitial from "./sqlite/0001-initial.js";
import * as sqliteUserIdNoPad from "./sqlite/0002-user-id-no-pad.js";
import * as sqliteAnsweredQuestions from "./sqlite/0003-answered-questions.js";
import * as sqliteOutbox from "./sqlite/0004-outbox.js";
import * as sqliteQuestionMemory from "./sqlite/0005-question-memory.js";
import * as sqliteOutboxTrace from "./sqlite/0006-outbox-trace.js";
import * as sqliteMissedMode from "./sqlite/0007-missed-mode.js";

/**
 * Migrations per store, imported statically (FileMigrationProvider's dynamic
 * imports fail under vitest and in bundles). Both stores share the names.
 */
const migrations: Record<Store, Record<string, Migration>> = {
  mysql: {
    "0001-initial": mysqlInitial,
    "0002-user-id-no-pad": mysqlUserIdNoPad,
    "0003-answered-questions": mysqlAnsweredQuestions,
    "0004-outbox": mysqlOutbox,
    "0005-question-memory": mysqlQuestionMemory,
    "0006-outbox-trace": mysqlOutboxTrace,
    "0007-missed-mode": mysqlMissedMode,
  },
  sqlite: {
    "0001-initial": sqliteInitial,
    "0002-user-id-no-pad": sqliteUserIdNoPad,
    "0003-answered-questions": sqliteAnsweredQuestions,
    "0004-outbox": sqliteOutbox,
    "0005-question-memory": sqliteQuestionMemory,
    "0006-outbox-trace": sqliteOutboxTrace,
    "0007-missed-mode": sqliteMissedMode,
  },
};

export function migrationProvider(store: Store): MigrationProvider {
  return { getMigrations: async () => migrations[store] };
}
