import { connect as http2Connect } from "node:http2";
import { PassThrough } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CodeMeaning, HTTP_REFUSALS } from "../../src/app/codes.js";
import { answerClientError } from "../../src/edge/head-refusals.js";
import { grpcFrame } from "../support/h2-raw.js";
import { type InProcessService, startInProcessService } from "../support/in-process.js";
import { startTestService, type TestService } from "../support/service.js";

/**
 * HTTP's own refusals (codes.ts `HTTP_REFUSALS`) through every transport:
 * the same HTTP status where HTTP's is said, the same code (REST's and
 * Connect's `code`, gRPC's and gRPC-Web's `grpc-status`) and never a
 * `Retry-After`. In process where the socket does not matter; HTTP/2's
 * header list over a socket, as only a socket carries it.
 */

const RPC = "/practice.v1.PracticeSessionService/StartSession";
const REST = "/quizzes/1/sessions";

/** What a caller saw of a refusal. */
interface Seen {
  status: number;
  /** The code the body names (REST, Connect), or the `grpc-status` (gRPC, gRPC-Web); null: none said. */
  code: string | number | null;
  retryAfter: string | null;
}

/** What the table says a caller sees: gRPC's transports carry the code's number. */
function expected(refusal: CodeMeaning, by: "name" | "number", status = refusal.httpStatus): Seen {
  return {
    status,
    code: by === "name" ? refusal.name : refusal.grpcStatus,
    retryAfter: null,
  };
}

/** The code a body or trailers said: problem+json's or Connect's `code`, gRPC-Web's trailer frame. */
function codeSaid(headers: Record<string, unknown>, body: Buffer): string | number | null {
  const grpcStatus = headers["grpc-status"];
  if (grpcStatus !== undefined) return Number(grpcStatus);
  const type = String(headers["content-type"] ?? "");
  if (type.startsWith("application/grpc")) {
    const said = /grpc-status: ?(\d+)/.exec(body.toString("latin1"));
    return said ? Number(said[1]) : null;
  }
  if (body.length === 0) return null;
  return (JSON.parse(body.toString("utf8")) as { code: string }).code;
}

describe("in process (app.inject): a body too large or in a type the path does not read", () => {
  let svc: InProcessService;
  let auth: Record<string, string>;
  beforeAll(async () => {
    svc = await startInProcessService();
    auth = await svc.auth("refused");
  });
  afterAll(() => svc?.close());

  async function send(path: string, type: string, payload: string | Buffer): Promise<Seen> {
    const res = await svc.app.inject({
      method: "POST",
      url: path,
      headers: { ...auth, "content-type": type },
      payload,
    });
    const trailers = (res.trailers ?? {}) as Record<string, unknown>;
    return {
      status: res.statusCode,
      code: codeSaid({ ...res.headers, ...trailers }, res.rawPayload),
      retryAfter: (res.headers["retry-after"] as string | undefined) ?? null,
    };
  }

  it("415: unimplemented on REST, Connect, gRPC and gRPC-Web, with HTTP's status", async () => {
    const refusal = HTTP_REFUSALS.unsupportedMediaType;
    expect(await send(REST, "text/plain", "{}")).toEqual(expected(refusal, "name"));
    // Fastify has no parser for the type: the root's problem+json.
    expect(await send(RPC, "application/xml", "{}")).toEqual(expected(refusal, "name"));
    expect(await send(RPC, "application/grpc+xml", "{}")).toEqual(expected(refusal, "name"));
    expect(await send(RPC, "application/grpc-web+xml", "{}")).toEqual(expected(refusal, "name"));
    // Connect's handler refuses a type it has a parser for with a bare 415: the status alone.
    expect(await send(RPC, "text/plain", "{}")).toEqual({
      ...expected(refusal, "name"),
      code: null,
    });
  });

  it("413: resource_exhausted on every transport, never with Retry-After", async () => {
    const refusal = HTTP_REFUSALS.contentTooLarge;
    const big = JSON.stringify({ quiz_id: "1", pad: "x".repeat(70 * 1024) });
    const frame = grpcFrame(new Uint8Array(70 * 1024).fill(0x41));
    expect(await send(REST, "application/json", big)).toEqual(expected(refusal, "name"));
    // connect-es answers its own readMaxBytes: Connect with the code's status (429), gRPC's in trailers.
    const connect = await send(RPC, "application/json", big);
    expect(connect).toEqual(expected(refusal, "name", connect.status));
    expect(await send(RPC, "application/grpc+proto", frame)).toEqual(
      expected(refusal, "number", 200),
    );
    expect(await send(RPC, "application/grpc-web+proto", frame)).toEqual(
      expected(refusal, "number", 200),
    );
  });
});

describe("in process: refusals of an HTTP/1.1 head, before any route or transport is known", () => {
  /** What answerClientError writes for Node's parser error `code`. */
  function refusalOf(code: string): Seen {
    const socket = new PassThrough();
    let written = "";
    socket.on("data", (chunk: Buffer) => {
      written += chunk.toString("utf8");
    });
    answerClientError(Object.assign(new Error(code), { code }), socket);
    const [head = "", body = ""] = written.split("\r\n\r\n");
    return {
      status: Number(head.split(" ")[1]),
      code: (JSON.parse(body) as { code: string }).code,
      retryAfter: /^retry-after:/im.test(head) ? "said" : null,
    };
  }

  it("408 deadline_exceeded and 431 resource_exhausted, as the table has them", () => {
    expect(refusalOf("ERR_HTTP_REQUEST_TIMEOUT")).toEqual(
      expected(HTTP_REFUSALS.requestTimeout, "name"),
    );
    expect(refusalOf("HPE_HEADER_OVERFLOW")).toEqual(expected(HTTP_REFUSALS.headTooLarge, "name"));
  });
});

describe("over HTTP/2 (a socket): a header list over the limit", () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(() => svc?.close());

  /** One request on a session of its own, sent before the server's SETTINGS arrive. */
  async function send(path: string, type: string | undefined): Promise<Seen> {
    const session = http2Connect(svc.baseUrl);
    try {
      return await new Promise<Seen>((resolve, reject) => {
        const stream = session.request({
          ":method": type === undefined ? "GET" : "POST",
          ":path": path,
          ...(type === undefined ? {} : { "content-type": type }),
          "x-pad": "p".repeat(30_000),
        });
        let headers: Record<string, unknown> = {};
        const chunks: Buffer[] = [];
        stream.on("response", (h) => {
          headers = h;
        });
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        stream.on("error", reject);
        stream.on("close", () =>
          resolve({
            status: Number(headers[":status"]),
            code: codeSaid(headers, Buffer.concat(chunks)),
            retryAfter: (headers["retry-after"] as string | undefined) ?? null,
          }),
        );
        stream.end();
      });
    } finally {
      session.destroy();
    }
  }

  it("431: resource_exhausted on REST, Connect, gRPC and gRPC-Web, with HTTP's status where it is said", async () => {
    const refusal = HTTP_REFUSALS.headTooLarge;
    expect(await send(REST, undefined)).toEqual(expected(refusal, "name"));
    expect(await send(RPC, "application/json")).toEqual(expected(refusal, "name"));
    expect(await send(RPC, "application/grpc")).toEqual(expected(refusal, "number", 200));
    expect(await send(RPC, "application/grpc-web+proto")).toEqual(expected(refusal, "number", 200));
  });
});
