import type { Quiz } from "./arbitraries.js";
import type { ConnectList, ConnectStart, GrpcRequest, RestRequest } from "./requests.js";

/**
 * The oracle: what the contract says each generated request gets, written
 * from the contract (README's error table), not from the code. A list means
 * that several answers are fine (the input does not decide between them).
 */

/** An id the requests' rule refuses (none, or over 64 characters) is invalid, whatever it names. */
const refusedId = (quiz: Quiz) => quiz.raw === "" || [...quiz.raw].length > 64;

/**
 * A start's JSON object body: valid with no field but `mode`, and a `mode` of "full" (the
 * others may be refused for want of questions due or missed); a field the operation does not
 * have is invalid.
 */
function startBody(text: string | undefined): "full" | "other" | "invalid" {
  const body = JSON.parse(text ?? "{}") as Record<string, unknown>;
  if (Object.keys(body).some((k) => k !== "mode")) return "invalid";
  if (body.mode === undefined || body.mode === "full") return "full";
  return ["review", "missed"].includes(body.mode as string) ? "other" : "invalid";
}

/** The HTTP status of a REST request. */
export function expectedRest(r: RestRequest): number | number[] {
  // "", ".", "..", very long segments and bad percent-encoding may or may not
  // reach the route: any of these 4xx will do.
  if (r.quiz.kind === "unroutable" || r.quiz.kind === "verbatim") {
    return [400, 401, 404, 405, 413, 415];
  }
  if (r.method === "HEAD" || r.method === "OPTIONS") return [200, 204, 400, 401, 404, 405];
  if (r.method !== "GET" && r.method !== "POST") return [404, 405, 401];
  if (r.auth !== "valid") return 401;
  if (r.method === "GET") {
    if (!r.query.valid || refusedId(r.quiz)) return 400;
    return r.quiz.kind === "live" || r.quiz.kind === "no-questions" ? 200 : 404;
  }
  if (r.body.kind === "huge") return 413;
  if (r.headers["content-encoding"] !== undefined && r.body.text) return [400, 415, 200, 201, 404];
  switch (r.body.kind) {
    case "bad":
      return r.body.contentType === "application/json" ? 400 : [400, 415];
    case "json":
      return 400;
    default: {
      const body = r.body.kind === "object" ? startBody(r.body.text) : "full";
      if (body === "invalid" || refusedId(r.quiz)) return 400;
      if (r.quiz.kind !== "live") return r.quiz.kind === "no-questions" ? 400 : 404;
      return body === "full" ? [200, 201] : [200, 201, 400];
    }
  }
}

/** The Connect code of a Connect JSON ListSessions call. */
export function expectedConnectList(r: ConnectList): string | string[] {
  const hasEncoding =
    r.headers["content-encoding"] !== undefined && r.headers["content-encoding"] !== "identity";
  if (hasEncoding)
    return ["invalid_argument", "unimplemented", "internal", "unauthenticated", "ok", "not_found"];
  if (
    r.headers["connect-timeout-ms"] !== undefined ||
    r.headers["connect-protocol-version"] !== undefined
  )
    return ["invalid_argument", "unauthenticated", "ok", "not_found", "deadline_exceeded"];
  // A call without a valid token is refused before its request is read.
  if (r.auth !== "valid") return "unauthenticated";
  const fields = [r.status.check, r.limit.check, r.cursor.check];
  if (r.quizAs === "number" || r.quizAs === "array" || fields.includes("parse")) {
    return "invalid_argument";
  }
  if (fields.includes("app")) return "invalid_argument";
  // quiz_id is required, and at most 64 characters.
  if (r.quizAs === "missing" || refusedId(r.quiz)) return "invalid_argument";
  const quizOk =
    r.quizAs === "string" && (r.quiz.kind === "live" || r.quiz.kind === "no-questions");
  return quizOk ? "ok" : "not_found";
}

/** The Connect code of a Connect StartSession call (JSON, garbage or binary body). */
export function expectedConnectStart(r: ConnectStart): string | string[] {
  if (r.auth !== "valid") return "unauthenticated";
  if (r.shape !== "json") return ["invalid_argument", "not_found", "ok", "failed_precondition"];
  if (refusedId(r.quiz)) return "invalid_argument";
  if (r.quiz.kind === "live") return "ok";
  if (r.quiz.kind === "no-questions") return "failed_precondition";
  return "not_found";
}

/** The gRPC code (as Connect names it) of a typed grpc-js call. */
export function expectedGrpc(r: GrpcRequest): string {
  const quizOk = r.quiz.kind === "live" || r.quiz.kind === "no-questions";
  if (refusedId(r.quiz)) return "invalid_argument";
  if (r.start) {
    return r.quiz.kind === "live"
      ? "ok"
      : r.quiz.kind === "no-questions"
        ? "failed_precondition"
        : "not_found";
  }
  if (r.status < 0 || r.status > 2 || r.limit < 0 || r.limit > 100 || !r.cursor.valid) {
    return "invalid_argument";
  }
  return quizOk ? "ok" : "not_found";
}
