import type { DescMessage, Message } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  type Answer,
  type CompleteSessionResponse,
  CompleteSessionResponseSchema,
  type GetSessionResponse,
  GetSessionResponseSchema,
  type ListSessionsResponse,
  ListSessionsResponseSchema,
  type PracticeSession,
  type SnapshotQuestion,
  type StartSessionResponse,
  StartSessionResponseSchema,
  type SubmitAnswerResponse,
  SubmitAnswerResponseSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";

/**
 * Hand-written Connect JSON for the practice responses: the string
 * protobuf-es's `toJsonString` makes with Connect's default options (JSON
 * names, fields in number order, proto3 zero values and empty lists left
 * out, Timestamps as RFC 3339), built by concatenation the way REST's
 * fast-json-stringify does, instead of a reflective walk building an object
 * tree for `JSON.stringify`. session-json.test.ts compares the two on
 * random messages.
 */
export type JsonEncoder = (message: Message) => string;

const encoders = new Map<string, (message: never) => string>([
  [ListSessionsResponseSchema.typeName, listSessionsResponse],
  [StartSessionResponseSchema.typeName, startSessionResponse],
  [GetSessionResponseSchema.typeName, getSessionResponse],
  [SubmitAnswerResponseSchema.typeName, submitAnswerResponse],
  [CompleteSessionResponseSchema.typeName, completeSessionResponse],
]);

/** The hand-written JSON encoder for messages of `schema`, or undefined (then `toJsonString`). */
export function jsonEncoderFor(schema: DescMessage): JsonEncoder | undefined {
  return encoders.get(schema.typeName) as JsonEncoder | undefined;
}

function listSessionsResponse(m: ListSessionsResponse): string {
  let out = "";
  if (m.sessions.length > 0) out += `,"sessions":${list(m.sessions, session)}`;
  if (m.nextCursor !== "") out += `,"nextCursor":${str(m.nextCursor)}`;
  if (m.hasMore) out += `,"hasMore":true`;
  return object(out);
}

function startSessionResponse(m: StartSessionResponse): string {
  let out = "";
  if (m.session !== undefined) out += `,"session":${session(m.session)}`;
  if (m.created) out += `,"created":true`;
  if (m.questions.length > 0) out += `,"questions":${list(m.questions, snapshotQuestion)}`;
  return object(out);
}

function getSessionResponse(m: GetSessionResponse): string {
  let out = "";
  if (m.session !== undefined) out += `,"session":${session(m.session)}`;
  if (m.questions.length > 0) out += `,"questions":${list(m.questions, snapshotQuestion)}`;
  return object(out);
}

function submitAnswerResponse(m: SubmitAnswerResponse): string {
  let out = "";
  if (m.answer !== undefined) out += `,"answer":${answer(m.answer)}`;
  if (m.session !== undefined) out += `,"session":${session(m.session)}`;
  return object(out);
}

function completeSessionResponse(m: CompleteSessionResponse): string {
  return m.session === undefined ? "{}" : `{"session":${session(m.session)}}`;
}

function session(s: PracticeSession): string {
  let out = "";
  if (s.id !== "") out += `,"id":${str(s.id)}`;
  if (s.quizId !== "") out += `,"quizId":${str(s.quizId)}`;
  if (s.startedAt !== undefined) out += `,"startedAt":${timestamp(s.startedAt)}`;
  if (s.completedAt !== undefined) out += `,"completedAt":${timestamp(s.completedAt)}`;
  if (s.totalQuestions !== 0) out += `,"totalQuestions":${int32(s.totalQuestions)}`;
  if (s.correctAnswers !== 0) out += `,"correctAnswers":${int32(s.correctAnswers)}`;
  if (s.scorePercentage !== undefined) out += `,"scorePercentage":${int32(s.scorePercentage)}`;
  if (s.answers.length > 0) out += `,"answers":${list(s.answers, answer)}`;
  if (s.answeredQuestions !== 0) out += `,"answeredQuestions":${int32(s.answeredQuestions)}`;
  if (s.expiresAt !== undefined) out += `,"expiresAt":${timestamp(s.expiresAt)}`;
  return object(out);
}

function answer(a: Answer): string {
  let out = "";
  if (a.questionId !== undefined) out += `,"questionId":${str(a.questionId)}`;
  if (a.userAnswer !== undefined) out += `,"userAnswer":${str(a.userAnswer)}`;
  if (a.isCorrect !== undefined) out += `,"isCorrect":${a.isCorrect ? "true" : "false"}`;
  if (a.answeredAt !== undefined) out += `,"answeredAt":${timestamp(a.answeredAt)}`;
  return object(out);
}

function snapshotQuestion(q: SnapshotQuestion): string {
  let out = "";
  if (q.position !== 0) out += `,"position":${int32(q.position)}`;
  if (q.questionId !== undefined) out += `,"questionId":${str(q.questionId)}`;
  if (q.correctAnswer !== undefined) out += `,"correctAnswer":${str(q.correctAnswer)}`;
  return object(out);
}

/** `{` + the fields (each written with a leading comma) + `}`. */
function object(fields: string): string {
  return fields === "" ? "{}" : `{${fields.slice(1)}}`;
}

function list<T>(items: T[], item: (value: T) => string): string {
  let out = "[";
  for (let i = 0; i < items.length; i++) out += (i === 0 ? "" : ",") + item(items[i] as T);
  return `${out}]`;
}

function str(value: string): string {
  // What JSON.stringify escapes: quote, backslash, control characters and
  // (lone) surrogates; pairs are not escaped, but they are rare enough here
  // to leave to JSON.stringify.
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) {
      return JSON.stringify(value);
    }
  }
  return `"${value}"`;
}

function int32(value: number): string {
  // toJson passes any number through; JSON.stringify writes -0 as 0.
  return JSON.stringify(value);
}

/** A Timestamp's JSON, as protobuf-es writes it (and refuses it). */
function timestamp(t: Timestamp): string {
  const ms = Number(t.seconds) * 1000;
  if (ms < MIN_MS || ms > MAX_MS) {
    throw new Error(
      `cannot encode message ${t.$typeName} to JSON: must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z inclusive`,
    );
  }
  if (t.nanos < 0 || t.nanos > 999999999) {
    throw new Error(`cannot encode message ${t.$typeName} to JSON: nanos out of range`);
  }
  let z = "Z";
  if (t.nanos > 0) {
    const nanos = (t.nanos + 1000000000).toString().substring(1);
    if (nanos.substring(3) === "000000") z = `.${nanos.substring(0, 3)}Z`;
    else if (nanos.substring(6) === "000") z = `.${nanos.substring(0, 6)}Z`;
    else z = `.${nanos}Z`;
  }
  // protobuf-es: new Date(ms).toISOString().replace(".000Z", z), and ms is whole seconds.
  const day = Math.floor(ms / DAY_MS);
  if (day !== cachedDay) {
    cachedDay = day;
    cachedDate = new Date(day * DAY_MS).toISOString().slice(0, 11);
  }
  const secs = (ms - day * DAY_MS) / 1000;
  const h = Math.floor(secs / 3600);
  const m = Math.floor((secs % 3600) / 60);
  return `"${cachedDate}${two(h)}:${two(m)}:${two(secs % 60)}${z}"`;
}

function two(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

// Date.toISOString is about 0.7 µs: a page has 40 timestamps, mostly of one day.
const DAY_MS = 86_400_000;
let cachedDay = Number.NaN;
let cachedDate = "";

const MIN_MS = Date.parse("0001-01-01T00:00:00Z");
const MAX_MS = Date.parse("9999-12-31T23:59:59Z");
