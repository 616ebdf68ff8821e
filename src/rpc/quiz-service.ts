import type { ServiceImpl } from "@connectrpc/connect";
import type { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import type { Quizzes } from "../app/quizzes.js";

/**
 * QuizService over Connect, gRPC and gRPC-Web. Authenticated by the same
 * interceptor as PracticeSessionService; the quiz content is the same for
 * every user, so the handler does not need the user id.
 */
export function quizService(quizzes: Quizzes): ServiceImpl<typeof QuizService> {
  return {
    async getQuiz(req) {
      const quiz = await quizzes.getQuiz(req.quizId);
      return { quiz };
    },
  };
}
