import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
// The repository's generated code (buf generate → gen/). In your app, import
// your own copy of it, or the package your team publishes it in.
import { PracticeSessionService } from "../../../gen/practice/v1/practice_session_service_pb.js";
import { QuizService } from "../../../gen/practice/v1/quiz_service_pb.js";
import type { PageConfig } from "./config.js";
import { traceContextInterceptor } from "./trace-context.js";

/** Typed clients of the two services, over one transport. */
export function createClients(config: PageConfig) {
  // Every call carries the bearer token; the service answers `unauthenticated` without it.
  const bearer: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${config.token}`);
    return next(req);
  };
  const options = {
    baseUrl: config.serviceUrl,
    interceptors: [bearer, traceContextInterceptor()],
  };
  const transport =
    config.protocol === "grpc-web"
      ? createGrpcWebTransport(options)
      : createConnectTransport(options);
  return {
    sessions: createClient(PracticeSessionService, transport),
    quizzes: createClient(QuizService, transport),
  };
}

export type Clients = ReturnType<typeof createClients>;

/** Whether the service said the quiz (or what was asked for) does not exist. */
export function isNotFound(err: unknown): boolean {
  return ConnectError.from(err).code === Code.NotFound;
}

/** An error as a sentence for the person at the page, with a hint where one helps. */
export function describeError(err: unknown, crossOrigin: boolean): string {
  const e = ConnectError.from(err);
  // One sentence of our own: the service's message already says "get a new token".
  if (e.code === Code.Unauthenticated) return SIGNED_OUT;
  const hint =
    e.code === Code.NotFound
      ? " Check the quiz id."
      : e.code === Code.Unknown || e.code === Code.Unavailable
        ? crossOrigin
          ? " Is the service running, and is this page's origin in its CORS_ORIGINS?"
          : " Is the service running?"
        : "";
  const message = e.rawMessage || e.message;
  return `${message.charAt(0).toUpperCase()}${message.slice(1)}${/[.!?]$/.test(message) ? "" : "."}${hint}`;
}

/** What the page says, once, when the service no longer accepts its token. */
export const SIGNED_OUT =
  "Your sign-in has expired or is not valid. Answers you gave are kept on this device and " +
  "sent when you open the page again with a new token (from the link the service printed).";

/** Whether the service refused the call for its token. */
export function isSignedOut(err: unknown): boolean {
  return ConnectError.from(err).code === Code.Unauthenticated;
}

/** The `sub` of a JWT, to say who is practising; "" if it cannot be read. */
export function tokenSubject(token: string): string {
  try {
    const payload = token.split(".")[1] ?? "";
    const json = atob(payload.replace(/-/g, "+").replace(/_/g, "/"));
    const sub: unknown = JSON.parse(json).sub;
    return typeof sub === "string" ? sub : "";
  } catch {
    return "";
  }
}
