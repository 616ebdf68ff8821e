import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { outcomeCode } from "../ops/outcome.js";
import { type RequestLog, requestId, rpcTransport } from "../ops/request-log.js";
import { clientGoneKey } from "./admission-interceptor.js";
import { admitted, type EarlyAdmission, earlyAdmission, refusedAtOnce } from "./early-admission.js";
import { respond, respondFixed } from "./h2-respond.js";
import { callOutcomeKey } from "./outcome-interceptor.js";
import type { RpcTable } from "./rpc-routes.js";
import { connectionKey } from "./stream-limits.js";
import { bodyCapFor, once, type UnaryAnswer, type UnaryPath } from "./unary-call.js";

export interface H2StreamAdapterOptions {
  readMaxBytes: number;
  /** Each call's line and metrics sample; its logger takes our errors. */
  requestLog: RequestLog;
}

/**
 * Serves one HTTP/2 stream if it is an RPC of ours; false leaves it to
 * whoever else listens (Fastify, through Node's compatibility layer).
 */
export type H2StreamHandler = (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => boolean;

/** What a server-side RST_STREAM code means to the handler, as Connect's Node adapter says. */
const H2_CANCEL = 0x8;

/**
 * Connect over HTTP/2 straight from Node's `stream` event: the same router,
 * protocols (gRPC, gRPC-Web, Connect), interceptors and error model as the
 * Fastify plugin, without Node's HTTP/2 compatibility layer (an
 * IncomingMessage/ServerResponse pair per call) and Fastify's routing, hooks
 * and reply around it. That layer cost about as much CPU per gRPC call as
 * the service's own work.
 *
 * It takes POSTs to a known procedure path without an `Origin` header (no
 * browser, so no CORS to answer); everything else goes on to Fastify. What
 * the Fastify hooks give every request, it gives too: `x-request-id`, the
 * request's log line and its metrics sample, with the same fields.
 *
 * Unary calls take a shorter path through Connect's pieces (see
 * grpc-unary.ts, connect-unary.ts); everything else goes through Connect's
 * own handler.
 * Unary and server-streaming requests (one message) are read whole with
 * plain 'data' events, at most `readMaxBytes` plus an envelope: past that,
 * Connect answers `resource_exhausted` from what was read. A stream the
 * client has reset before its request was read never reaches the handler.
 */
export function createH2StreamAdapter(
  table: RpcTable,
  options: H2StreamAdapterOptions,
): H2StreamHandler {
  const paths = table.handlers;
  const unaryPaths = table.unary;
  const bodyCap = bodyCapFor(options.readMaxBytes);

  return (stream, headers) => {
    const rawPath = headers[":path"] ?? "";
    const q = rawPath.indexOf("?");
    const path = q < 0 ? rawPath : rawPath.slice(0, q);
    const handler = paths.get(path);
    if (handler === undefined || headers[":method"] !== "POST" || headers.origin !== undefined) {
      return false;
    }
    const early = earlyAdmission(table.shedGuards.get(path), headers["content-type"]);
    if (early !== undefined && refusedAtOnce(early)) {
      answerAtOnce(stream, headers, path, early.refusal, options);
    } else {
      serve(stream, headers, path, handler, unaryPaths.get(path), bodyCap, options, early);
    }
    return true;
  };
}

function serve(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  path: string,
  handler: UniversalHandler,
  unary: UnaryPath | undefined,
  bodyCap: number,
  options: H2StreamAdapterOptions,
  early: EarlyAdmission | undefined,
): void {
  const began = performance.now();
  const reqId = requestId({ headers });
  const transport = rpcTransport(headers["content-type"]);
  let resultCode = "";
  let user = "";
  let status = 0;
  let answered = false;
  // Without an 'error' listener, a client's reset would be an uncaught exception.
  stream.on("error", () => {});
  const abort = new AbortController();
  stream.once("close", () => {
    // A call that ended normally is not aborted: no error object is built for nothing.
    if (!answered) {
      abort.abort(
        stream.rstCode === H2_CANCEL
          ? new ConnectError("the client cancelled the call", Code.Canceled)
          : new ConnectError("the stream closed", Code.Aborted),
      );
    }
    options.requestLog.record({
      reqId,
      user,
      transport,
      procedure: path,
      code: answered ? outcomeCode(resultCode, status, transport) : resultCode || "canceled",
      status,
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
    .set(clientGoneKey, () => stream.closed || stream.destroyed)
    .set(connectionKey, stream.session);
  const kind = handler.method.methodKind;
  const whole = kind === "unary" || kind === "server_streaming";
  const body = whole ? readWhole(stream, bodyCap) : undefined;
  const refuse = (refusal: UnaryAnswer) => {
    resultCode = "unavailable";
    status = refusal.status;
    respondFixed(stream, refusal, reqId);
    answered = true;
  };
  const call = async () => {
    const whole = body ? await body : undefined;
    // The client reset the stream while we read: nobody is left to answer.
    if (stream.closed || stream.destroyed) return;
    const url = `http://${headers[":authority"] ?? "localhost"}${path}`;
    const header = webHeaders(headers);
    const signal = abort.signal;
    if (unary !== undefined && whole !== undefined) {
      const answer = await unary({ url, header, body: whole, signal, contextValues });
      if (answer !== undefined) {
        status = answer.status;
        await respond(stream, answer, reqId, true);
        answered = true;
        return;
      }
    }
    const response = await handler({
      httpVersion: "2.0",
      method: "POST",
      url,
      header,
      body: whole ? once(whole) : (stream as AsyncIterable<Uint8Array>),
      signal,
      contextValues,
    });
    status = response.status;
    await respond(stream, response, reqId, kind === "unary" || kind === "client_streaming");
    answered = true;
  };
  admitted(early, abort.signal, handler.method.name, contextValues, refuse, call).catch(
    (err: unknown) => {
      if (ConnectError.from(err).code !== Code.Aborted) {
        options.requestLog.logger.error({ err, reqId, procedure: path }, "rpc stream failed");
      }
      if (!stream.destroyed) stream.close(0x2); // INTERNAL_ERROR
    },
  );
}

/** Answers a call without reading it (a shed call): the same id, log line and metrics sample. */
function answerAtOnce(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  path: string,
  answer: UnaryAnswer,
  options: H2StreamAdapterOptions,
): void {
  const reqId = requestId({ headers });
  stream.on("error", () => {});
  // The unread request is drained: the stream closes (and frees its place
  // among the connection's concurrent streams) once both sides have ended.
  stream.resume();
  respondFixed(stream, answer, reqId);
  const transport = rpcTransport(headers["content-type"]);
  options.requestLog.record({
    reqId,
    user: "",
    transport,
    procedure: path,
    code: "unavailable",
    status: answer.status,
    ms: 0,
  });
}

/** The request body, whole, up to `cap` bytes (the rest is read and dropped). */
function readWhole(stream: ServerHttp2Stream, cap: number): Promise<Uint8Array> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      stream.off("end", done);
      stream.off("close", done);
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    };
    stream.on("data", (chunk: Buffer) => {
      if (size >= cap) return;
      chunks.push(chunk);
      size += chunk.length;
      if (size >= cap) done();
    });
    stream.once("end", done);
    stream.once("close", done);
  });
}

function webHeaders(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const key in headers) {
    if (key.charCodeAt(0) === 58 /* ":" */) continue;
    const value = headers[key];
    if (typeof value === "string") out.append(key, value);
    else if (Array.isArray(value)) for (const v of value) out.append(key, v);
  }
  return out;
}
