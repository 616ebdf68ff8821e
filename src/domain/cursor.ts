import { isDatabaseId, isSessionId } from "./session.js";

/**
 * Keyset position of a page boundary: the (started_at, id) of the last
 * session on the page. The next page holds the sessions strictly after it in
 * the list's order (started_at descending, then id descending).
 */
export interface Cursor {
  startedAt: Date;
  id: string;
}

const VERSION = "v1";
const BASE64URL = /^[A-Za-z0-9_-]{1,200}$/;
/** Largest millisecond value a DATETIME(3) can hold (9999-12-31T23:59:59.999Z). */
const MAX_MS = 253402300799999;

/** Encodes a cursor as opaque base64url text. */
export function encodeCursor(cursor: Cursor): string {
  return encodePosition(VERSION, cursor.startedAt, cursor.id);
}

/**
 * Decodes a cursor made by `encodeCursor`, or returns undefined. Checks every
 * part, so a forged or truncated cursor never reaches SQL as anything but a
 * well-formed position.
 */
export function decodeCursor(text: string): Cursor | undefined {
  const position = decodePosition(text, VERSION, isSessionId);
  return position && { startedAt: position.at, id: position.id };
}

/**
 * Keyset position in a due list (ListDueQuestions): the (due_at, question
 * id) of the last question on the page. The next page holds the questions
 * strictly after it (due_at ascending, then question id ascending).
 */
export interface DueCursor {
  dueAt: Date;
  questionId: string;
}

const DUE_VERSION = "d1";

/** Encodes a due-list cursor as opaque base64url text. */
export function encodeDueCursor(cursor: DueCursor): string {
  return encodePosition(DUE_VERSION, cursor.dueAt, cursor.questionId);
}

/** Decodes a cursor made by `encodeDueCursor`, or returns undefined; every part is checked. */
export function decodeDueCursor(text: string): DueCursor | undefined {
  const position = decodePosition(text, DUE_VERSION, isDatabaseId);
  return position && { dueAt: position.at, questionId: position.id };
}

/** Both lists' cursors: `version.milliseconds.id`, as base64url. */
function encodePosition(version: string, at: Date, id: string): string {
  return Buffer.from(`${version}.${at.getTime()}.${id}`).toString("base64url");
}

/** A position made by `encodePosition` with `version` and an id `isId` accepts, or undefined. */
function decodePosition(
  text: string,
  version: string,
  isId: (id: string) => boolean,
): { at: Date; id: string } | undefined {
  if (!BASE64URL.test(text)) return undefined;
  const [tag, ms, id, ...rest] = Buffer.from(text, "base64url").toString("latin1").split(".");
  if (tag !== version || ms === undefined || id === undefined || rest.length > 0) {
    return undefined;
  }
  if (!/^(0|[1-9][0-9]{0,14})$/.test(ms) || Number(ms) > MAX_MS || !isId(id)) {
    return undefined;
  }
  return { at: new Date(Number(ms)), id };
}
