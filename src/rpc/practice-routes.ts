import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import type { PracticeSessions } from "../app/practice-sessions.js";
import type { Quizzes } from "../app/quizzes.js";
import type { Authenticator } from "../auth/authenticator.js";
import { authInterceptor } from "./auth-interceptor.js";
import { callInterceptor } from "./call-interceptor.js";
import { outcomeInterceptor } from "./outcome-interceptor.js";
import { practiceSessionService } from "./practice-session-service.js";
import { quizService } from "./quiz-service.js";
import { validateInterceptor } from "./validate-interceptor.js";

/** A set of Connect services with the interceptors they run under. */
export interface RpcRoutes {
  routes: (router: ConnectRouter) => void;
  interceptors: Interceptor[];
}

export interface PracticeRpcOptions {
  sessions: PracticeSessions;
  quizzes: Quizzes;
  authenticator: Authenticator;
  /** Where failures that would be 5xx are logged (ops/failure-log.ts). */
  onFailure?: (err: unknown, status: number) => void;
}

/**
 * The practice services as Connect routes with their interceptors: what
 * server.ts registers on Fastify, and what tests run in process through
 * `createRouterTransport` (the same routes, no socket).
 */
export function practiceRpc(options: PracticeRpcOptions): RpcRoutes {
  return {
    routes: (router) => {
      router.service(PracticeSessionService, practiceSessionService(options.sessions));
      router.service(QuizService, quizService(options.quizzes));
    },
    // outcomeInterceptor first (outermost): it sees the errors of the others.
    // The call last: a slot goes only to a call whose token is verified and
    // whose whole request is read and valid, and is held while the handler really runs.
    interceptors: [
      outcomeInterceptor(options.onFailure),
      authInterceptor(options.authenticator),
      validateInterceptor(),
      callInterceptor(),
    ],
  };
}
