import { randomBytes } from "node:crypto";
import type { Quiz } from "./arbitraries.js";
import type { ConnectList, ConnectStart, GrpcRequest, RestRequest } from "./requests.js";
import type { FuzzWorld } from "./world.js";

/** What came back over HTTP: the response and its body as text. */
export interface Answer {
  res: Response;
  text: string;
}

/** The authorization header of a generated auth kind (undefined: none). */
export const authHeader = (world: FuzzWorld, a: string): string | undefined =>
  a === "valid"
    ? `Bearer ${world.fuzzerToken}`
    : a === "garbage"
      ? `Bearer ${randomBytes(9).toString("hex")}`
      : a === "basic"
        ? "Basic Zm9vOmJhcg=="
        : undefined;

/** The path segment of a quiz id, percent-encoded as a client would (or sent verbatim). */
export function pathFor(quiz: Quiz, encode: boolean) {
  if (quiz.kind === "verbatim") return quiz.raw;
  return encode
    ? encodeURIComponent(quiz.raw)
    : [...quiz.raw]
        .map((c) => (/^[A-Za-z0-9._~!$&'()*+,;=:@-]$/.test(c) ? c : encodeURIComponent(c)))
        .join("");
}

export async function sendRest(world: FuzzWorld, r: RestRequest): Promise<Answer> {
  const search = new URLSearchParams(r.query.pairs).toString();
  const url = `${world.svc.baseUrl}${r.prefix}/quizzes/${pathFor(r.quiz, r.encode)}/sessions${search ? `?${search}` : ""}`;
  const headers = new Headers(r.headers);
  const auth = authHeader(world, r.auth);
  if (auth) headers.set("authorization", auth);
  const withBody = r.method === "POST" && r.body.text !== undefined;
  if (withBody && r.body.contentType) headers.set("content-type", r.body.contentType);
  const res = await fetch(url, {
    method: r.method,
    headers,
    body: withBody
      ? r.body.kind === "huge"
        ? `{"a":"${"x".repeat(70_000)}"}`
        : r.body.text
      : undefined,
  });
  const text = await res.text();
  return { res, text };
}

/** The Connect JSON body of a generated ListSessions request. */
export function connectBody(r: ConnectList) {
  const body: Record<string, unknown> = { ...r.extra };
  if (r.quizAs === "string") body.quizId = r.quiz.raw;
  if (r.quizAs === "number")
    body.quizId = Number.isFinite(Number(r.quiz.raw)) ? Number(r.quiz.raw) : 7;
  if (r.quizAs === "array") body.quizId = [r.quiz.raw];
  if (r.status.value !== undefined) body.status = r.status.value;
  if (r.limit.value !== undefined) body.limit = r.limit.value;
  if (r.cursor.value !== undefined) body.cursor = r.cursor.value;
  return body;
}

/** A Connect unary call over HTTP/1.1 with a JSON body (the body as given, valid or not). */
export async function sendConnect(
  world: FuzzWorld,
  path: string,
  body: string,
  headers: Record<string, string>,
  auth: string,
): Promise<Answer> {
  const h = new Headers(headers);
  h.set("content-type", "application/json");
  const a = authHeader(world, auth);
  if (a) h.set("authorization", a);
  const res = await fetch(`${world.svc.baseUrl}/practice.v1.PracticeSessionService/${path}`, {
    method: "POST",
    headers: h,
    body,
  });
  return { res, text: await res.text() };
}

/** A generated Connect StartSession call: JSON, garbage, or bytes sent as binary protobuf. */
export async function sendConnectStart(world: FuzzWorld, r: ConnectStart): Promise<Answer> {
  if (r.shape === "binary") {
    const h = new Headers({ "content-type": "application/proto" });
    const a = authHeader(world, r.auth);
    if (a) h.set("authorization", a);
    const res = await fetch(
      `${world.svc.baseUrl}/practice.v1.PracticeSessionService/StartSession`,
      {
        method: "POST",
        headers: h,
        body: r.bytes,
      },
    );
    return { res, text: await res.text() };
  }
  const body = r.shape === "json" ? JSON.stringify({ quizId: r.quiz.raw }) : r.garbage;
  return sendConnect(world, "StartSession", body, {}, r.auth);
}

/** A generated grpc-js call: its numeric gRPC code (0 for ok) and the session ids it saw. */
export async function sendGrpc(
  world: FuzzWorld,
  r: GrpcRequest,
): Promise<{ code: number; ids: string[] }> {
  const headers = { authorization: `Bearer ${world.fuzzerToken}` };
  const call = r.start
    ? world.svc.grpc
        .startSession({ quizId: r.quiz.raw }, headers)
        .then((x) => [x.session?.id ?? ""])
    : world.svc.grpc
        .listSessions(
          { quizId: r.quiz.raw, status: r.status, limit: r.limit, cursor: r.cursor.value },
          headers,
        )
        .then((x) => x.sessions.map((s) => s.id));
  return call.then(
    (ids) => ({ code: 0, ids }),
    (e: { code: number }) => ({ code: e.code, ids: [] as string[] }),
  );
}
