import type { Duplex } from "node:stream";
import type { ConnectError } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import { type CodeMeaning, HTTP_REFUSALS, meaningOf } from "../app/codes.js";
import { errors } from "../app/errors.js";
import type { AppReply, AppRequest } from "../app-server.js";
import { MAX_HEADER_BYTES } from "../limits.js";
import { recordOutcome } from "../ops/outcome.js";
import { answerEarly } from "./early-answer.js";
import { type Problem, problem } from "./problem-document.js";

/** RPC routes never take the REST answer. */
const sendNothing = () => undefined;

/**
 * Refusals of a request head, before any route: problem+json like every
 * other refusal of the gateway, not Node's bare status lines.
 */

const TOO_LARGE = `the request line and headers are larger than ${MAX_HEADER_BYTES / 1024} KiB`;

/** What Node's HTTP/1.1 parser refused, as the problem to answer (its own default statuses). */
function refusalOf(code: string | undefined): Problem {
  const [meaning, detail] = PARSER_REFUSALS[code ?? ""] ?? NOT_HTTP;
  return problem(meaning, detail);
}

const PARSER_REFUSALS: Record<string, [CodeMeaning, string]> = {
  HPE_HEADER_OVERFLOW: [HTTP_REFUSALS.headTooLarge, TOO_LARGE],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [
    HTTP_REFUSALS.contentTooLarge,
    "the chunk extensions are too large",
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [HTTP_REFUSALS.requestTimeout, "the request did not arrive in time"],
};

const NOT_HTTP: [CodeMeaning, string] = [
  meaningOf(Code.InvalidArgument),
  "the request is not valid HTTP/1.1",
];

/**
 * The HTTP/1.1 server's `clientError` listener: Node's parser refused the head
 * (431 too large, 400 not HTTP), so the problem is written to the socket, then closed.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // A socket the client reset, or one in the middle of a response, gets no second answer.
  const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })
    ._httpMessage;
  if (err.code === "ECONNRESET" || !socket.writable || answering?.headersSent === true) {
    socket.destroy();
    return;
  }
  const refusal = refusalOf(err.code);
  const body = JSON.stringify(refusal);
  socket.end(
    `HTTP/1.1 ${refusal.status} ${refusal.title}\r\n` +
      "content-type: application/problem+json\r\n" +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      "connection: close\r\n\r\n" +
      body,
  );
  socket.once("finish", () => socket.destroy());
}

/**
 * Whether an HTTP/2 header list (`rawHeaders`: names and values in turn) is
 * over the SETTINGS_MAX_HEADER_LIST_SIZE advertised, counted as RFC 9113
 * §6.5.2 counts it: each field's name and value and 32 octets.
 */
export function headListTooLarge(rawHeaders: readonly string[]): boolean {
  let size = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    size += (rawHeaders[i]?.length ?? 0) + (rawHeaders[i + 1]?.length ?? 0) + 32;
  }
  return size > MAX_HEADER_BYTES;
}

/** The refusal of a header list over the limit: 431, `resource_exhausted` on RPC transports. */
export function headTooLarge(): ConnectError {
  return errors.headTooLarge(TOO_LARGE);
}

/**
 * An HTTP/2 `onRequest` hook: Node does not enforce the SETTINGS_MAX_HEADER_LIST_SIZE
 * it advertises, so a larger header list gets 431 here (RFC 9113 §6.5.2);
 * an RPC, its protocol's `resource_exhausted` (gRPC: trailers-only).
 */
export async function refuseLargeHttp2Head(
  request: AppRequest,
  reply: AppReply,
): Promise<AppReply | undefined> {
  if (request.raw.httpVersionMajor !== 2 || !headListTooLarge(request.raw.rawHeaders)) {
    return undefined;
  }
  // RPC callers get their protocol's answer (gRPC a trailers-only
  // RESOURCE_EXHAUSTED): a bare 431 reaches a gRPC client as `unknown`.
  if (request.routeOptions.config.rpc) {
    answerEarly(request, reply, headTooLarge(), sendNothing);
    return reply;
  }
  const refusal = refusalOf("HPE_HEADER_OVERFLOW");
  recordOutcome(request, { code: refusal.code });
  return reply.code(refusal.status).type("application/problem+json").send(refusal);
}
