import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  AnswerConflictSchema,
  NothingDueSchema,
  type PracticeSessionService,
} from "../../gen/practice/v1/practice_session_service_pb.js";
import { AnswerConflict, errors, NothingDue } from "../app/errors.js";
import type { PracticeSessions } from "../app/practice-sessions.js";
import { modeOf, pageSizeOf, statusOf } from "../contract/request-values.js";
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
          status: statusOf(req.status),
          limit: pageSizeOf(req.limit),
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
        .startSession(userId(ctx), req.quizId, modeOf(req.mode), callSignal(ctx.values))
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
          { limit: pageSizeOf(req.limit), cursor: req.cursor },
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
