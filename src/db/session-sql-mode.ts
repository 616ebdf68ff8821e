import type { Ask } from "./session-ask.js";
import { UnusableSession } from "./unusable-session.js";

/**
 * sql_mode flags that change what the service's statements mean: a backslash as a plain
 * character (NO_BACKSLASH_ESCAPES), a double-quoted string as a name (ANSI_QUOTES), `||` as
 * concatenation, an empty string as NULL (EMPTY_STRING_IS_NULL), `SET a = b, b = a` reading
 * old values (SIMULTANEOUS_ASSIGNMENT), `NOT a BETWEEN …` grouped otherwise
 * (HIGH_NOT_PRECEDENCE), CHAR values read padded, and the combined modes that set them.
 */
const MEANING_CHANGING_MODES = new Set([
  "NO_BACKSLASH_ESCAPES",
  "ANSI_QUOTES",
  "PIPES_AS_CONCAT",
  "EMPTY_STRING_IS_NULL",
  "SIMULTANEOUS_ASSIGNMENT",
  "HIGH_NOT_PRECEDENCE",
  "PAD_CHAR_TO_FULL_LENGTH",
  "ANSI",
  "ORACLE",
  "MSSQL",
  "DB2",
  "MAXDB",
  "POSTGRESQL",
]);

/** Removes those flags from the session's `sql_mode` (`mode`, as read) and checks that they are gone. */
export async function pinSqlMode(ask: Ask, mode: string): Promise<void> {
  const flags = mode.split(",").filter((f) => f !== "");
  if (!flags.some((f) => MEANING_CHANGING_MODES.has(f))) return;
  const kept = flags.filter((f) => !MEANING_CHANGING_MODES.has(f));
  // Names the server gave; checked, as they go into the statement's text.
  if (!kept.every((f) => /^[A-Z0-9_]+$/.test(f))) {
    throw new UnusableSession(`gives sessions an sql_mode the service cannot read: ${mode}`);
  }
  await ask(`SET SESSION sql_mode = '${kept.join(",")}'`);
  const [now] = await ask("SELECT @@SESSION.sql_mode AS mode");
  const left = String(now?.mode)
    .split(",")
    .filter((f) => MEANING_CHANGING_MODES.has(f));
  if (left.length > 0) {
    throw new UnusableSession(
      `keeps sql_mode ${left.join(",")} in sessions after SET SESSION sql_mode: the service's statements would mean something else (remove it from the server's sql_mode, and from init_connect or a proxy's session settings)`,
    );
  }
}
