import { createContextValues } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import type { RpcTable } from "./rpc-routes.js";
import { bodyCapFor, once, type UnaryPath } from "./unary-call.js";

/** The content types the short paths take (grpc-unary.ts, connect-unary.ts). */
const SHORT_PATH_TYPES = new Set([
  "application/grpc",
  "application/grpc+proto",
  "application/grpc-web",
  "application/grpc-web+proto",
  "application/json",
  "application/proto",
]);

/**
 * Puts the table's short path in front of each unary handler among
 * `handlers`, in place: the calls Connect's Fastify plugin serves (browser
 * calls, which carry an `Origin`) then get the same answers as the adapters
 * give everybody else: the same speed, and `invalid_argument` for a message
 * that does not parse where Connect's own handler says `internal`.
 *
 * In place because connect-fastify makes its router, passes it to `routes`,
 * and serves `router.handlers` as they are after that; the test "an RPC
 * message that does not parse" (with an Origin) fails if it stops doing so.
 */
export function putShortPaths(handlers: UniversalHandler[], table: RpcTable, readMaxBytes: number) {
  const bodyCap = bodyCapFor(readMaxBytes);
  handlers.forEach((handler, i) => {
    const unary = table.unary.get(handler.requestPath);
    if (unary !== undefined) handlers[i] = withShortPath(handler, unary, bodyCap);
  });
}

function withShortPath(
  handler: UniversalHandler,
  unary: UnaryPath,
  bodyCap: number,
): UniversalHandler {
  const serve = async (request: UniversalServerRequest) => {
    const { body } = request;
    if (!SHORT_PATH_TYPES.has(request.header.get("content-type") ?? "") || !isIterable(body)) {
      return handler(request);
    }
    const whole = await readUpTo(body, bodyCap);
    const answer = await unary({
      url: request.url,
      header: request.header,
      body: whole,
      signal: request.signal,
      contextValues: request.contextValues ?? createContextValues(),
    });
    if (answer === undefined) return handler({ ...request, body: once(whole) });
    return {
      status: answer.status,
      header: answer.header,
      body: answer.body && once(answer.body),
      trailer: answer.trailer,
    };
  };
  return Object.assign(serve, handler);
}

function isIterable(body: unknown): body is AsyncIterable<Uint8Array> {
  return typeof body === "object" && body !== null && Symbol.asyncIterator in body;
}

/**
 * The body, or its first `cap` bytes and more (see `bodyCapFor`); the rest
 * is read and dropped, so that the connection can go on.
 */
async function readUpTo(body: AsyncIterable<Uint8Array>, cap: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const it = body[Symbol.asyncIterator]();
  for (let r = await it.next(); !r.done; r = await it.next()) {
    chunks.push(r.value);
    size += r.value.length;
    if (size >= cap) {
      void drain(it);
      break;
    }
  }
  return chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
}

async function drain(it: AsyncIterator<Uint8Array>): Promise<void> {
  try {
    while (!(await it.next()).done) {}
  } catch {
    // The client went away: nothing left to drop.
  }
}
