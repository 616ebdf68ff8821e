/**
 * The targets of the timed and counted runs: one request (ListSessions,
 * StartSession or GetQuiz) sent over each transport. The transports are a
 * table, so a scenario says what it sends and which rows it wants rather than
 * building each target by hand.
 */

import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import type * as grpc from "@grpc/grpc-js";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import type { Child } from "../lib/children.js";
import {
  type Bound,
  bearer,
  type Call,
  closedLoop,
  type GrpcLoadClient,
  httpLoad,
  openLoop,
} from "../lib/load.js";
import type { LoadResult } from "../lib/stats.js";

/** A way to send one kind of request: a factory of calls for a load run. */
export interface Target {
  name: string;
  /** Process whose CPU and RSS are charged. */
  pid: () => number;
  /** Closed loop at `c`, or open loop at `rate`. */
  run(c: number, bound: Bound, rate?: number): Promise<LoadResult>;
}

/** The processes and clients the targets send to. */
export interface Servers {
  svc: Child;
  bare: Child;
  grpc: GrpcLoadClient;
  /** connect-node clients over HTTP/2 (one session each): Connect binary and gRPC. */
  connectH2: Client<typeof PracticeSessionService>;
  grpcConnect: Client<typeof PracticeSessionService>;
}

/** connect-node clients of the service on `port`: Connect binary over h2, and gRPC. */
export function connectClients(port: number): Pick<Servers, "connectH2" | "grpcConnect"> {
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    connectH2: createClient(
      PracticeSessionService,
      createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true }),
    ),
    grpcConnect: createClient(PracticeSessionService, createGrpcTransport({ baseUrl })),
  };
}

/** A connect-node call as a status label. */
async function connectStatus(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return "OK";
  } catch (err) {
    return err instanceof ConnectError ? Code[err.code] : String(err);
  }
}

interface HttpRequest {
  method: "GET" | "POST";
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  headersFor?: (i: number) => Record<string, string>;
  expect: number;
}

/** A target that sends one HTTP/1.1 request through the harness's undici load. */
export function httpTarget(name: string, child: () => Child, req: HttpRequest): Target {
  return {
    name,
    pid: () => child().pid,
    run: (c, bound, rate) =>
      httpLoad({
        url: `http://127.0.0.1:${child().port}${req.path}`,
        method: req.method,
        headers: req.headers,
        body: req.body,
        headersFor: req.headersFor,
        connections: c,
        bound,
        overallRate: rate,
        expect: req.expect,
      }),
  };
}

/** A target around any call: closed loop, or open loop when given a rate. */
export function callTarget(name: string, pid: () => number, call: Call, expect: string): Target {
  return {
    name,
    pid,
    run: (c, bound, rate) =>
      rate === undefined
        ? closedLoop(call, c, bound, expect)
        : openLoop(call, rate, "durationMs" in bound ? bound.durationMs : 10_000, expect),
  };
}

/** The ceiling: the service's own statements in a mysql2 loop, charged to the harness. */
export function rawTarget(run: (i: number) => Promise<unknown>): Target {
  return callTarget(
    "raw mysql2",
    () => process.pid,
    async (i) => {
      await run(i);
      return "ok";
    },
    "ok",
  );
}

/** One request, described once for every transport. */
export interface Request {
  /** The REST route (path and query) and the status it answers with. */
  rest: { method: "GET" | "POST"; path: string; expect: number };
  /** The RPC's path, for Connect and gRPC. */
  procedure: string;
  /** The request message in Connect's JSON and in binary. */
  json: string;
  bin: Buffer;
  /** One token for every request, or a token per request index (a new user each). */
  auth: { token: string } | { tokenFor: (i: number) => string };
  /** The call through a connect-node client, for the scenarios that measure those. */
  connect?: (s: Servers, headers: Record<string, string>) => Promise<unknown>;
}

/** Names of the rows of {@link TRANSPORTS}. */
export type Transport =
  | "bare Fastify"
  | "bare Fastify + token cache"
  | "REST"
  | "Connect JSON"
  | "Connect binary"
  | "gRPC"
  | "Connect binary h2 (connect-node)"
  | "gRPC (connect-node client)";

/** Authorization of a request as fixed headers, or headers per request index. */
function httpAuth(req: Request): Pick<HttpRequest, "headers" | "headersFor"> {
  if ("token" in req.auth) return { headers: { authorization: `Bearer ${req.auth.token}` } };
  const tokenFor = req.auth.tokenFor;
  return { headers: {}, headersFor: (i) => ({ authorization: `Bearer ${tokenFor(i)}` }) };
}

/** A Connect unary POST in the given codec. */
function connectPost(req: Request, contentType: string, body: string | Buffer): HttpRequest {
  const { headers, headersFor } = httpAuth(req);
  return {
    method: "POST",
    path: req.procedure,
    headers: { ...headers, "content-type": contentType, "connect-protocol-version": "1" },
    headersFor,
    body,
    expect: 200,
  };
}

/** gRPC metadata per request: built once when every request carries the same token. */
function grpcAuth(req: Request): (i: number) => grpc.Metadata {
  if ("token" in req.auth) {
    const md = bearer(req.auth.token);
    return () => md;
  }
  const tokenFor = req.auth.tokenFor;
  return (i) => bearer(tokenFor(i));
}

/** A connect-node client's call: one fixed token (the connect-node rows only list). */
function connectNode(name: string, s: () => Servers, req: Request): Target {
  const headers = httpAuth(req).headers;
  const call = req.connect;
  if (!call) throw new Error(`${name}: the request has no connect-node call`);
  return callTarget(
    name,
    () => s().svc.pid,
    () => connectStatus(() => call(s(), headers)),
    "OK",
  );
}

/** Every transport, in report order; each builds its target for a request. */
export const TRANSPORTS: readonly {
  name: Transport;
  build: (name: string, s: () => Servers, req: Request) => Target;
}[] = [
  {
    name: "bare Fastify",
    build: (name, s, req) => httpTarget(name, () => s().bare, { ...req.rest, ...httpAuth(req) }),
  },
  {
    name: "bare Fastify + token cache",
    build: (name, s, req) =>
      httpTarget(name, () => s().bare, {
        ...req.rest,
        path: `/cached${req.rest.path}`,
        ...httpAuth(req),
      }),
  },
  {
    name: "REST",
    build: (name, s, req) => httpTarget(name, () => s().svc, { ...req.rest, ...httpAuth(req) }),
  },
  {
    name: "Connect JSON",
    build: (name, s, req) =>
      httpTarget(name, () => s().svc, connectPost(req, "application/json", req.json)),
  },
  {
    name: "Connect binary",
    build: (name, s, req) =>
      httpTarget(name, () => s().svc, connectPost(req, "application/proto", req.bin)),
  },
  {
    name: "gRPC",
    build: (name, s, req) => {
      const md = grpcAuth(req);
      return callTarget(
        name,
        () => s().svc.pid,
        (i) => s().grpc.call(req.procedure, req.bin, md(i)),
        "OK",
      );
    },
  },
  { name: "Connect binary h2 (connect-node)", build: connectNode },
  { name: "gRPC (connect-node client)", build: connectNode },
];

/**
 * The targets of one request: the raw mysql2 ceiling first, then the chosen
 * transports in the table's order (the report and the accounting rely on it).
 */
export function targetsFor(
  s: () => Servers,
  req: Request,
  raw: (i: number) => Promise<unknown>,
  transports: readonly Transport[],
): Target[] {
  return [
    rawTarget(raw),
    ...TRANSPORTS.filter((t) => transports.includes(t.name)).map((t) => t.build(t.name, s, req)),
  ];
}
