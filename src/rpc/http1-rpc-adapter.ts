import type { IncomingMessage, ServerResponse } from "node:http";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { outcomeCode } from "../ops/outcome.js";
import { type RequestLog, requestId } from "../ops/request-log.js";
import { clientGoneKey } from "./admission-interceptor.js";
import { admitted, earlyAdmission, refusedAtOnce } from "./early-admission.js";
import { callOutcomeKey } from "./outcome-interceptor.js";
import type { RpcTable } from "./rpc-routes.js";
import { connectionKey } from "./stream-limits.js";
import type { UnaryAnswer } from "./unary-call.js";

export interface Http1RpcAdapterOptions {
  readMaxBytes: number;
  /** Each call's line and metrics sample; its logger takes our errors. */
  requestLog: RequestLog;
}

/** Serves one HTTP/1.1 request if it is a unary Connect call of ours; false leaves it to Fastify. */
export type Http1RpcHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * Unary Connect calls over HTTP/1.1 (`POST`, `application/json` or
 * `application/proto`, no `Origin`: servers and tools, not browsers, whose
 * CORS Fastify answers) straight into the short Connect path
 * (connect-unary.ts), or when it declines into Connect's own handler: never
 * through Fastify's routing, hooks and reply. The same `x-request-id`, log
 * line and metrics sample as the Fastify hooks. The body is read whole, at
 * most `readMaxBytes` and a byte (Connect then answers `resource_exhausted`).
 * Everything else (REST, gRPC-Web, streams, GET) stays on Fastify.
 */
export function createHttp1RpcAdapter(
  table: RpcTable,
  options: Http1RpcAdapterOptions,
): Http1RpcHandler {
  const cap = options.readMaxBytes + 1;
  return (req, res) => {
    const url = req.url ?? "";
    const unary = req.method === "POST" ? table.unary.get(url) : undefined;
    const type = req.headers["content-type"];
    if (
      unary === undefined ||
      (type !== "application/json" && type !== "application/proto") ||
      req.headers.origin !== undefined
    ) {
      return false;
    }
    const handler = table.handlers.get(url);
    if (handler === undefined) return false;
    const early = earlyAdmission(table.shedGuards.get(url), type);
    if (early !== undefined && refusedAtOnce(early)) {
      answerAtOnce(req, res, url, early.refusal, options);
      return true;
    }

    const began = performance.now();
    const reqId = requestId(req);
    let resultCode = "";
    let user = "";
    let answered = false;
    res.setHeader("x-request-id", reqId);
    const abort = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) {
        abort.abort(new ConnectError("the client went away", Code.Canceled));
      }
      options.requestLog.record({
        reqId,
        user,
        transport: "connect",
        procedure: url,
        code: answered
          ? outcomeCode(resultCode, res.statusCode, "connect")
          : resultCode || "canceled",
        status: res.statusCode,
        ms: performance.now() - began,
      });
    });
    const contextValues = createContextValues()
      .set(callOutcomeKey, {
        settle(code, userId) {
          resultCode = code;
          user = userId;
        },
      })
      // For admission control and the caps on long-lived streams.
      .set(clientGoneKey, () => res.destroyed)
      .set(connectionKey, req.socket);

    const refuse = (refusal: UnaryAnswer) => {
      resultCode = "unavailable";
      answered = true;
      req.resume(); // drained unread, for the connection's next request
      writeAnswer(res, refusal);
    };
    const call = async () => {
      const body = await readWhole(req, cap);
      if (res.destroyed) return;
      const request = {
        url: `http://${req.headers.host ?? "localhost"}${url}`,
        header: webHeaders(req),
        body,
        signal: abort.signal,
        contextValues,
      };
      const answer = await unary(request);
      if (answer !== undefined) {
        answered = true;
        writeAnswer(res, answer);
        return;
      }
      const response = await handler({
        httpVersion: req.httpVersion,
        method: "POST",
        ...request,
        body: (async function* () {
          yield body;
        })(),
      });
      answered = true;
      // Connect's writer settles on an 'end' event that a ServerResponse never
      // emits: 'close' (after the response, or when the client goes) ends the
      // call, and with it the call's slot.
      await Promise.race([
        universalResponseToNodeResponse(response, res),
        new Promise((resolve) => res.once("close", resolve)),
      ]);
    };
    admitted(early, abort.signal, handler.method.name, contextValues, refuse, call).catch(
      (err: unknown) => {
        if (ConnectError.from(err).code !== Code.Aborted) {
          options.requestLog.logger.error({ err, reqId, procedure: url }, "rpc request failed");
        }
        if (!res.headersSent) res.statusCode = 500;
        res.destroy();
      },
    );
    return true;
  };
}

/** Answers a call without reading it (a shed call): the same id, log line and metrics sample. */
function answerAtOnce(
  req: IncomingMessage,
  res: ServerResponse,
  url: string,
  answer: UnaryAnswer,
  options: Http1RpcAdapterOptions,
): void {
  const reqId = requestId(req);
  // The unread body is drained so that the connection can carry the next request.
  req.resume();
  res.writeHead(answer.status, { "x-request-id": reqId, ...Object.fromEntries(answer.header) });
  res.end(answer.body);
  options.requestLog.record({
    reqId,
    user: "",
    transport: "connect",
    procedure: url,
    code: "unavailable",
    status: answer.status,
    ms: 0,
  });
}

function writeAnswer(res: ServerResponse, answer: UnaryAnswer): void {
  res.statusCode = answer.status;
  answer.header.forEach((value, key) => {
    res.setHeader(key, value);
  });
  res.end(answer.body);
}

function readWhole(req: IncomingMessage, cap: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      if (size >= cap) return;
      chunks.push(chunk);
      size += chunk.length;
    });
    req.once("end", () =>
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)),
    );
    req.once("error", reject);
  });
}

function webHeaders(req: IncomingMessage): Headers {
  const out = new Headers();
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) out.append(raw[i] as string, raw[i + 1] as string);
  return out;
}
