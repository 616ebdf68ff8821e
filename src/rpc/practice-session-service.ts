import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  AnswerConflictSchema,
  NothingDueSchema,
  type PracticeSessionService,
  SessionMode,
  SessionStatus,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { AnswerConflict, errors, NothingDue } from "../app/errors.js";
import type { PracticeSessions } from "../app/practice-sessions.js";
import type { SessionMode as Mode, SessionStatus as Status } from "../domain/session.js";
import { userIdKey } from "./auth-interceptor.js";
import { callSignal } from "./call-interceptor.js";
import {
  answerToProto,
  dueQuestionsToProto,
  sessionToProto,
  snapshotQuestionToProto,
  timestamp,
} from "./to-proto.js";

/**
 * PracticeSessionService over Connect, gRPC and gRPC-Web: parse the request,
 * call the use case, map the result. Rules live in PracticeSessions.
 */
export function practiceSessionService(
  sessions: PracticeSessions,
): ServiceImpl<typeof PracticeSessionService> {
  return {
    async listSessions(req, ctx) {
      const page = await sessions.listSessions(
        userId(ctx),
        {
          quizId: req.quizId,
          status: fromProto(STATUSES, req.status, "status"),
          // proto3 cannot tell 0 from unset: 0 asks for the default page size.
          limit: req.limit === 0 ? undefined : req.limit,
          cursor: req.cursor,
        },
        callSignal(ctx.values),
      );
      // Whole messages (with $typeName), so Connect has no `create` to run on them.
      return {
        $typeName: "practice.v1.ListSessionsResponse",
        sessions: page.sessions.map((s) => sessionToProto(s)),
        nextCursor: page.nextCursor ?? "",
        hasMore: page.hasMore,
      };
    },

    async startSession(req, ctx) {
      const { session, created, questions } = await sessions
        .startSession(
          userId(ctx),
          req.quizId,
          fromProto(MODES, req.mode, "mode"),
          callSignal(ctx.values),
        )
        .catch(withNextDueAt);
      return {
        $typeName: "practice.v1.StartSessionResponse",
        session: sessionToProto(session, session.answers),
        created,
        questions: questions.map(snapshotQuestionToProto),
      };
    },

    async getSession(req, ctx) {
      const { session, questions } = await sessions.getSession(
        userId(ctx),
        req.sessionId,
        callSignal(ctx.values),
      );
      return {
        $typeName: "practice.v1.GetSessionResponse",
        session: sessionToProto(session, session.answers),
        questions: questions.map(snapshotQuestionToProto),
      };
    },

    async submitAnswer(req, ctx) {
      const { answer, session } = await sessions
        .submitAnswer(
          userId(ctx),
          { sessionId: req.sessionId, questionId: req.questionId, userAnswer: req.userAnswer },
          callSignal(ctx.values),
        )
        .catch(withStoredAnswer);
      return {
        $typeName: "practice.v1.SubmitAnswerResponse",
        answer: answerToProto(answer),
        session: sessionToProto(session),
      };
    },

    async completeSession(req, ctx) {
      const session = await sessions.completeSession(
        userId(ctx),
        req.sessionId,
        callSignal(ctx.values),
      );
      return {
        $typeName: "practice.v1.CompleteSessionResponse",
        session: sessionToProto(session, session.answers),
      };
    },

    async listDueQuestions(req, ctx) {
      return dueQuestionsToProto(
        await sessions.listDueQuestions(
          userId(ctx),
          req.quizId,
          // proto3 cannot tell 0 from unset: 0 asks for the default page size.
          { limit: req.limit === 0 ? undefined : req.limit, cursor: req.cursor },
          callSignal(ctx.values),
        ),
      );
    },
  };
}

/** A review start with nothing due gets the next due time as a typed error detail (practice.v1.NothingDue). */
function withNextDueAt(err: unknown): never {
  if (err instanceof NothingDue && err.details.length === 0) {
    err.details.push({
      desc: NothingDueSchema,
      value: { nextDueAt: err.nextDueAt ? timestamp(err.nextDueAt) : undefined },
    });
  }
  throw err;
}

/** An AnswerConflict gets its stored answer as a typed error detail (practice.v1.AnswerConflict). */
function withStoredAnswer(err: unknown): never {
  if (err instanceof AnswerConflict && err.details.length === 0) {
    err.details.push({
      desc: AnswerConflictSchema,
      value: { storedAnswer: answerToProto(err.storedAnswer) },
    });
  }
  throw err;
}

function userId(ctx: HandlerContext): string {
  const id = ctx.values.get(userIdKey);
  // Only reachable if the router was built without authInterceptor.
  if (id === "") throw errors.unauthenticated();
  return id;
}

const STATUSES = new Map<SessionStatus, Status | undefined>([
  [SessionStatus.UNSPECIFIED, undefined],
  [SessionStatus.ACTIVE, "active"],
  [SessionStatus.COMPLETED, "completed"],
]);

const MODES = new Map<SessionMode, Mode>([
  [SessionMode.UNSPECIFIED, "full"],
  [SessionMode.FULL, "full"],
  [SessionMode.REVIEW, "review"],
  [SessionMode.MISSED, "missed"],
]);

/** A proto enum's value as `table` reads it; `what` names it in the error for one not in the table. */
function fromProto<E extends number, T>(table: Map<E, T>, value: E, what: string): T {
  // Enums are open: a newer client can send a value this server does not know.
  if (!table.has(value)) throw errors.invalidArgument(`unknown ${what} ${value}`);
  return table.get(value) as T;
}
