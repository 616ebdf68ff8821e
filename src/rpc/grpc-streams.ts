import {
  constants,
  type IncomingHttpHeaders,
  type ServerHttp2Stream,
  sensitiveHeaders,
} from "node:http2";
import type { ConnectRouter, createConnectRouter, Interceptor } from "@connectrpc/connect";
import { createContextValues } from "@connectrpc/connect";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { context } from "@opentelemetry/api";
import type { Logger } from "pino";
import { codeName } from "../app/codes.js";
import { HEADER_REQUEST_ID } from "../app/headers.js";
import type { StreamPath, StreamTaker } from "../app-server.js";
import { callerGone, type Call as EdgeCall } from "../edge/call.js";
import { type DoorOptions, enterCall } from "../edge/call-door.js";
import { answerTrailersOnly } from "../edge/early-answer.js";
import { headListTooLarge, headTooLarge } from "../edge/head-refusals.js";
import { callCode, resetByClient } from "../ops/outcome.js";
import { type RequestLog, requestId } from "../ops/request-log.js";
import { endServerSpan, routeTrace, startServerSpan } from "../ops/trace-requests.js";
import { userIdKey } from "./auth-interceptor.js";
import { callKey } from "./call-interceptor.js";
import { nodeHeaders, RequestHeaders } from "./lazy-headers.js";
import { callOutcomeKey } from "./outcome-interceptor.js";
import { readUpTo } from "./read-body.js";
import { type Call, callUrl, type Reply, type ServedBy } from "./short-path-call.js";
import { connectionKey } from "./stream-limits.js";
import { type UnaryMethod, unaryMethods } from "./unary-methods.js";

export interface GrpcStreamsOptions {
  /** The services' routes and interceptors, as given to connect-fastify. */
  routes: (router: ConnectRouter) => void;
  interceptors: Interceptor[];
  /** The options connect-fastify's router is built with (limits, compression, JSON). */
  connectOptions: Parameters<typeof createConnectRouter>[0];
  /** What every API call gets at the door (edge/call-door.ts). */
  door: DoorOptions;
  requestLog: RequestLog;
  /** The app's logger: the request log's lines carry the request's id on it, as Fastify's do. */
  logger: Logger;
  /** A SERVER span per call (ops/trace-requests.ts). */
  tracing: boolean;
  /** Whether X-Forwarded-For may name the caller (TRUST_PROXY): such calls go through Fastify, which reads it. */
  trustProxy: boolean;
  /** Told which handler answered each call taken here (the differential test). */
  onServed?: (by: ServedBy) => void;
}

/**
 * Unary gRPC over HTTP/2 on the core stream API, as grpc-js serves it: the
 * stream and its headers as the session hands them over, the answer written
 * with `respond` and its trailers with `sendTrailers`; no request and
 * response objects, no router, no hooks. What every call gets comes from the
 * same owners as on Fastify's routes: the door (deadline, caller, admission,
 * edge/call-door.ts), the interceptors (outcome, auth, validation, the
 * call's slot), Connect's gRPC answer (rpc/short-path-grpc.ts), the request
 * log and metrics, the server span. What Connect's gRPC answer would not
 * give as Connect does goes to Connect's own handler, on the same stream.
 *
 * Streams this does not take stay on Fastify's path: other methods and
 * protocols, a call from a browser (`origin`: CORS), one through a trusted
 * proxy (`x-forwarded-for`), any once the port drains (Fastify answers 503).
 */
export function grpcStreams(options: GrpcStreamsOptions): StreamPath {
  const { opt, methods } = unaryMethods(
    options.routes,
    options.connectOptions,
    options.interceptors,
  );
  const served = new Map<string, Served>();
  for (const [path, method] of methods) {
    served.set(path, { path, method, trace: routeTrace({ rpc: true, procedure: path }, path) });
  }
  let draining = false;
  return {
    take: ((stream, headers, rawHeaders) => {
      if (draining || headers[":method"] !== "POST") return false;
      const route = served.get(headers[":path"] ?? "");
      const type = headers["content-type"];
      if (route === undefined || (type !== "application/grpc" && type !== "application/grpc+proto"))
        return false;
      if (headers.origin !== undefined) return false;
      if (options.trustProxy && headers["x-forwarded-for"] !== undefined) return false;
      void serve(stream, headers, rawHeaders, route, opt.readMaxBytes, options);
      return true;
    }) satisfies StreamTaker,
    drain() {
      draining = true;
    },
  };
}

/** One method as this path serves it. */
interface Served {
  path: string;
  method: UnaryMethod;
  trace: ReturnType<typeof routeTrace>;
}

async function serve(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  rawHeaders: string[],
  route: Served,
  readMaxBytes: number,
  options: GrpcStreamsOptions,
): Promise<void> {
  const started = performance.now();
  const id = requestId({ headers });
  const type = headers["content-type"] as string;
  const encrypted = stream.session?.encrypted === true;
  // How the call ended, as the interceptors and the edge report it.
  let said = "";
  let userId = "";
  const { span, context: traceContext } = options.tracing
    ? startServerSpan({
        headers,
        method: "POST",
        httpVersion: "2.0",
        path: route.path,
        scheme: encrypted ? "https" : "http",
        trace: route.trace,
      })
    : { span: undefined, context: undefined };
  // A client's reset is an 'error' of the stream: the call's outcome (canceled), read at its close.
  stream.on("error", ignore);
  stream.once("close", () => {
    const code = callCode({
      said,
      answered: stream.writableEnded,
      left: resetByClient(stream.rstCode),
      status: 200,
      transport: "grpc",
    });
    // Nothing sent to a caller who left: 499, as nginx logs it.
    const status = code === "canceled" && !stream.headersSent ? 499 : 200;
    const ids = span?.spanContext();
    options.requestLog.record(
      {
        user: userId || undefined,
        transport: "grpc",
        procedure: route.path,
        code,
        status,
        ms: performance.now() - started,
        traceId: ids?.traceId,
        spanId: ids?.spanId,
      },
      requestLogger(options.logger, id),
    );
    if (span !== undefined) endServerSpan(span, { transport: "grpc", code, status });
  });
  const refuse = (err: ReturnType<typeof headTooLarge>) => {
    said = codeOf(err);
    answerTrailersOnly(stream, type, err);
  };
  if (headListTooLarge(rawHeaders)) return refuse(headTooLarge());
  const work = async () => {
    let edge: EdgeCall | undefined;
    const entered = await enterCall(
      {
        answering: stream,
        headers,
        rpc: true,
        ip: () => stream.session?.socket?.remoteAddress ?? "",
        complete: () => stream.readableEnded,
        answerEarly: refuse,
        // gRPC handlers answer their own deadline (the call's signal).
        answerDeadline: () => {},
      },
      options.door,
      (call) => {
        edge = call;
      },
    );
    userId = entered.userId ?? "";
    if (!entered.through || edge === undefined) return;
    // Room for a gRPC envelope's 5-byte header over the message limit.
    const read = await readUpTo(stream, readMaxBytes + 5);
    if (read === undefined || answeredOrGone(stream)) return;
    const values = createContextValues()
      .set(callOutcomeKey, {
        settle: (code, user) => {
          said = code;
          if (user !== "") userId = user;
        },
      })
      .set(callKey, edge)
      .set(userIdKey, userId)
      .set(connectionKey, stream.session ?? stream);
    const call: Call = {
      headers,
      url: () => callUrl(encrypted, headers[":authority"], route.path),
      edge,
      body: read.bytes,
      spec: route.method.spec,
      values,
      settle: (code) => {
        said = code;
      },
    };
    const out = read.whole ? await route.method.grpc(call) : undefined;
    options.onServed?.(out === undefined ? "connect" : "grpc stream");
    if (answeredOrGone(stream)) return;
    if (out !== undefined) return answer(stream, out, id);
    // Connect's own handler, on the stream, for what its gRPC answer leaves to it.
    const response = await route.method.fallback({
      httpVersion: "2.0",
      method: "POST",
      url: call.url(),
      header: new RequestHeaders(headers),
      body: read.replay(),
      signal: edge.signal,
      contextValues: values,
    });
    await answerUniversal(stream, response, id);
  };
  try {
    await (traceContext === undefined ? work() : context.with(traceContext, work));
  } catch (err) {
    // Nothing here throws on purpose: whatever did is the server's fault, and the call is reset.
    options.logger.error(
      { err, reqId: id },
      `handler for rpc ${route.method.spec.method.name} failed`,
    );
    if (!stream.destroyed) stream.close(constants.NGHTTP2_INTERNAL_ERROR);
  }
}

function ignore(): void {}

/** Whether an answer was sent already (the edge's, at the deadline) or the stream is gone. */
function answeredOrGone(stream: ServerHttp2Stream): boolean {
  return stream.headersSent || callerGone(stream);
}

/**
 * The request's id never repeats: HPACK would add each call's to the
 * connection's table, pushing out the headers that do repeat, so it is sent
 * as a literal never indexed.
 */
const NOT_INDEXED = [HEADER_REQUEST_ID];

/** The answer Connect's gRPC handler gives, written as compat would write it, without compat. */
function answer(stream: ServerHttp2Stream, out: Reply, id: string): void {
  const trailers = out.trailer === undefined ? undefined : nodeHeaders(out.trailer);
  stream.respond(
    {
      // The spread first: V8 copies an object into a new literal cheaply only there.
      ...nodeHeaders(out.header),
      ":status": out.status,
      [HEADER_REQUEST_ID]: id,
      [sensitiveHeaders]: NOT_INDEXED,
    },
    { waitForTrailers: trailers !== undefined },
  );
  if (trailers !== undefined) stream.once("wantTrailers", () => stream.sendTrailers(trailers));
  stream.end(out.body);
}

/** What connect-node's universalResponseToNodeResponse writes, on the stream itself. */
async function answerUniversal(
  stream: ServerHttp2Stream,
  response: UniversalServerResponse,
  id: string,
): Promise<void> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of response.body ?? []) chunks.push(chunk);
  if (answeredOrGone(stream)) return;
  const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
  answer(
    stream,
    {
      status: response.status,
      header: new Headers(response.header),
      body: chunks.length === 0 ? undefined : body,
      trailer: response.trailer === undefined ? undefined : new Headers(response.trailer),
    },
    id,
  );
}

/** The request log's logger of one call: the app's, with the request's id, as Fastify gives it. */
function requestLogger(logger: Logger, id: string) {
  return {
    info: (fields: object, msg: string) => logger.info({ reqId: id, ...fields }, msg),
    debug: (fields: object, msg: string) => logger.debug({ reqId: id, ...fields }, msg),
    isLevelEnabled: (level: string) => logger.isLevelEnabled(level),
  };
}

/** The Connect code name of an error the edge answers with. */
function codeOf(err: ReturnType<typeof headTooLarge>): string {
  return codeName(err.code);
}
