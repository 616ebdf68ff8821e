/**
 * The three requests the bench sends (ListSessions, StartSession, GetQuiz),
 * each as a {@link Request} for the transport table and the rows it is
 * measured on.
 */

import { create, toBinary } from "@bufbuild/protobuf";
import type { Pool } from "mysql2/promise";
import {
  ListSessionsRequestSchema,
  StartSessionRequestSchema,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { GetQuizRequestSchema } from "../../gen/practice/v1/quiz_service_pb.js";
import type { BenchData } from "../lib/data.js";
import type { Captured } from "./capture.js";
import { LIST_PATH, QUIZ_PATH, START_PATH } from "./settings.js";
import { type Servers, type Target, type Transport, targetsFor } from "./targets.js";

/** The service's transports, without the bare Fastify baselines. */
const SERVICE: Transport[] = ["REST", "Connect JSON", "Connect binary", "gRPC"];
/** The service's transports and the bare Fastify baselines. */
const WITH_BARE: Transport[] = ["bare Fastify", "bare Fastify + token cache", ...SERVICE];

/**
 * ListSessions of one history level, first page or from the deep cursor, on
 * every transport including the connect-node clients.
 */
export function listTargets(
  s: () => Servers,
  raw: Pool,
  token: string,
  data: BenchData,
  level: number,
  deep: boolean,
  listSql: Captured,
): Target[] {
  const quizId = data.levelQuiz.get(level) as string;
  const cursor = deep ? (data.deepCursor.get(level) as string) : "";
  const reqMsg = create(ListSessionsRequestSchema, { quizId, cursor });
  return targetsFor(
    s,
    {
      rest: {
        method: "GET",
        path: `/quizzes/${quizId}/sessions${deep ? `?cursor=${cursor}` : ""}`,
        expect: 200,
      },
      procedure: LIST_PATH,
      json: JSON.stringify(deep ? { quizId, cursor } : { quizId }),
      bin: Buffer.from(toBinary(ListSessionsRequestSchema, reqMsg)),
      auth: { token },
      connect: (srv, headers) => srv.connectH2.listSessions(reqMsg, { headers }),
    },
    () => raw.query(listSql.sql, listSql.parameters),
    [...WITH_BARE, "Connect binary h2 (connect-node)", "gRPC (connect-node client)"],
  );
}

/**
 * StartSession of `quizId`: a resume when every call carries the same user's
 * token, a create (201 on REST) when each carries a new user's.
 */
export function startTargets(
  s: () => Servers,
  tokenFor: (i: number) => string,
  quizId: string,
  expectCreated: boolean,
  rawCall: (i: number) => Promise<void>,
): Target[] {
  return targetsFor(
    s,
    {
      rest: {
        method: "POST",
        path: `/quizzes/${quizId}/sessions`,
        expect: expectCreated ? 201 : 200,
      },
      procedure: START_PATH,
      json: JSON.stringify({ quizId }),
      bin: Buffer.from(
        toBinary(StartSessionRequestSchema, create(StartSessionRequestSchema, { quizId })),
      ),
      auth: { tokenFor },
    },
    rawCall,
    WITH_BARE,
  );
}

/**
 * GetQuiz of a 10-question quiz on every transport of the service, next to
 * the service's own statement in a mysql2 loop. The bare Fastify baseline has
 * no quiz route: the list's baselines say what Fastify + mysql2 cost.
 */
export function quizTargets(
  s: () => Servers,
  raw: Pool,
  token: string,
  quizId: string,
  quizSql: Captured,
): Target[] {
  return targetsFor(
    s,
    {
      rest: { method: "GET", path: `/quizzes/${quizId}`, expect: 200 },
      procedure: QUIZ_PATH,
      json: JSON.stringify({ quizId }),
      bin: Buffer.from(toBinary(GetQuizRequestSchema, create(GetQuizRequestSchema, { quizId }))),
      auth: { token },
    },
    () => raw.query(quizSql.sql, quizSql.parameters),
    SERVICE,
  );
}
