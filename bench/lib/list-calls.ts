import {
  create,
  type DescMessage,
  type MessageShape,
  toBinary,
  toJsonString,
} from "@bufbuild/protobuf";
import { ListSessionsRequestSchema } from "../../gen/practice/v1/practice_session_service_pb.js";

/** The main user's history: the list's first page of 20 is what every call reads. */
export const HISTORY = 1000;
export const LIST = "/practice.v1.PracticeSessionService/ListSessions";

/**
 * Every call of a list bench is one user's: the per-user bound on waiting
 * calls would refuse what an open loop queues for a moment, which is not
 * what is measured.
 */
export const ONE_USER = { MAX_QUEUED_PER_USER: "10000" };

/** Another checkout's build on the same data (BENCH_BEFORE): its schema is the same. */
export const BEFORE = { MIGRATE_ON_START: "false" };

/** An HTTP/1.1 list call as sent, without its token. */
export interface HttpList {
  method: "GET" | "POST";
  path: string;
  expect: number;
  headers?: Record<string, string>;
  body?: string;
}

/** One RPC as a bench sends it: Connect JSON over HTTP/1.1, and gRPC's encoded message. */
export function rpcCalls<D extends DescMessage>(path: string, schema: D, message: MessageShape<D>) {
  const connectJson: HttpList = {
    method: "POST",
    path,
    expect: 200,
    headers: { "content-type": "application/json", "connect-protocol-version": "1" },
    body: toJsonString(schema, message),
  };
  return { connectJson, grpcMessage: toBinary(schema, message) };
}

/** ListSessions of `quizId` over REST, Connect JSON and gRPC (its encoded message). */
export function listCalls(quizId: string) {
  const rest: HttpList = { method: "GET", path: `/quizzes/${quizId}/sessions`, expect: 200 };
  const message = create(ListSessionsRequestSchema, { quizId });
  return { rest, ...rpcCalls(LIST, ListSessionsRequestSchema, message) };
}

/** The service's variables for tracing at `ratio`, exported to `endpoint`. */
export function tracingAt(endpoint: string, ratio: string): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_SERVICE_NAME: "practice-sessions-bench",
    OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
    OTEL_TRACES_SAMPLER_ARG: ratio,
  };
}
