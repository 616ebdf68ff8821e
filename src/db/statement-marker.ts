import { randomBytes } from "node:crypto";
import type { CompiledQuery, RootOperationNode } from "kysely";

/**
 * Each statement the service sends ends with a comment no other statement has: this
 * process's random tag and the statement's number. A KILL connection finds the statement by
 * it in `information_schema.PROCESSLIST` before it stops anything (kill-statement.ts), so a
 * KILL never names a thread the statement does not run on, whatever the servers look like.
 * At the end, not the start: tracing names a statement's span by its first word.
 */
const MARKER_START = ` /*pq ${randomBytes(6).toString("hex")} `;
let sent = 0;

/** The next statement's marker: hex and digits only, nothing LIKE or a quote reads otherwise. */
export function nextMarker(): string {
  return `${MARKER_START}${++sent}*/`;
}

/** What joins the statements of one request (answer-writes.ts). */
export const STATEMENT_SEPARATOR = ";\n";

const SEVERAL = Symbol("several statements");

/** `query`, statements joined by STATEMENT_SEPARATOR, marked as such for `marked`. */
export function severalStatements(query: CompiledQuery): CompiledQuery {
  return Object.freeze({ ...query, query: Object.freeze({ ...query.query, [SEVERAL]: true }) });
}

/** Whether `query` is several statements in one request (severalStatements). */
export function isSeveral(query: CompiledQuery): boolean {
  return (query.query as RootOperationNode & { [SEVERAL]?: true })[SEVERAL] === true;
}

/**
 * `text` marked. In a request of several statements PROCESSLIST shows the one running, so
 * each gets the marker.
 */
export function marked(marker: string, text: string, several: boolean): string {
  return several
    ? text.replaceAll(STATEMENT_SEPARATOR, marker + STATEMENT_SEPARATOR) + marker
    : text + marker;
}

/**
 * The statement `marker` ends, running on thread `threadId` of the server that reads this:
 * its QUERY_ID on MariaDB (`queryIds`), else the thread id; no row when it does not run there.
 */
export function findStatement(threadId: number, marker: string, queryIds: boolean): string {
  if (!Number.isSafeInteger(threadId) || !/^[/* a-f0-9pq]+$/.test(marker)) {
    throw new Error("not a thread id and marker");
  }
  const id = queryIds ? "QUERY_ID" : "ID";
  return `SELECT ${id} AS id FROM information_schema.PROCESSLIST WHERE ID = ${threadId} AND INFO LIKE '%${marker}'`;
}
