import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import { errors } from "../app/errors.js";
import type { Quizzes } from "../app/quizzes.js";
import { pageSizeOf } from "../contract/request-values.js";
import { userIdKey } from "./auth-interceptor.js";
import { callSignal } from "./call-interceptor.js";

/**
 * QuizService over Connect, gRPC and gRPC-Web. Authenticated by the same
 * interceptor as PracticeSessionService; the quiz content is the same for
 * every user, the list's in-progress counts are the caller's.
 */
export function quizService(quizzes: Quizzes): ServiceImpl<typeof QuizService> {
  return {
    async getQuiz(req, ctx) {
      const quiz = await quizzes.getQuiz(req.quizId, callSignal(ctx.values));
      return { quiz };
    },

    async listQuizzes(req, ctx) {
      const page = await quizzes.listQuizzes(
        userId(ctx),
        { limit: pageSizeOf(req.limit), cursor: req.cursor },
        callSignal(ctx.values),
      );
      return {
        quizzes: page.quizzes,
        nextCursor: page.nextCursor ?? "",
        hasMore: page.hasMore,
      };
    },
  };
}

function userId(ctx: HandlerContext): string {
  const id = ctx.values.get(userIdKey);
  if (!id) throw errors.unauthenticated();
  return id;
}
