import { constants, type OutgoingHttpHeaders, type ServerHttp2Stream } from "node:http2";

/** A response to write on an HTTP/2 stream: Connect's, or the unary path's (one buffer). */
export interface Answer {
  status: number;
  header?: Headers;
  body?: AsyncIterable<Uint8Array> | Uint8Array;
  trailer?: Headers;
}

function nodeHeaders(headers: Headers | undefined, into: OutgoingHttpHeaders): OutgoingHttpHeaders {
  headers?.forEach((value, key) => {
    into[key] = value;
  });
  return into;
}

/**
 * Writes Connect's response: headers once the first body chunk exists (so
 * the implementation could still set some), each chunk as it comes (health
 * Watch streams), then the trailers, read only once the body is done (gRPC's
 * status is set at its end).
 */
export async function respond(
  stream: ServerHttp2Stream,
  response: Answer,
  reqId: string,
  single: boolean,
): Promise<void> {
  const head = () =>
    nodeHeaders(response.header, { ":status": response.status, "x-request-id": reqId });
  const trailer = response.trailer;
  if (trailer !== undefined) {
    stream.once("wantTrailers", () => {
      if (stream.destroyed) return;
      stream.sendTrailers(nodeHeaders(trailer, {}));
      // The answer is complete but the client may still be sending (a
      // reflection conversation ended by its lifetime): RST_STREAM NO_ERROR
      // after the trailers tells it to stop (RFC 9113 8.1) and frees the
      // stream's place among the connection's concurrent streams. On the next
      // turn: closed at once, the stream would drop the trailers unsent.
      if (!stream.readableEnded) {
        setImmediate(() => {
          if (!stream.closed) stream.close(constants.NGHTTP2_NO_ERROR);
        });
      }
    });
  }
  const body = response.body;
  if (body === undefined) {
    if (stream.destroyed) return;
    if (trailer === undefined) {
      stream.respond(head(), { endStream: true });
      return;
    }
    stream.respond(head(), { waitForTrailers: true });
    stream.end();
    return;
  }
  if (body instanceof Uint8Array) {
    if (stream.destroyed) return;
    stream.respond(head(), { waitForTrailers: trailer !== undefined });
    stream.end(body);
    return;
  }
  const it = body[Symbol.asyncIterator]();
  try {
    let chunk = await it.next();
    if (stream.destroyed) return;
    stream.respond(head(), { waitForTrailers: trailer !== undefined });
    if (single && chunk.done !== true) {
      // One response message: Connect joins it into one chunk. Wait for the
      // end of the body (the status is set then) and write both at once.
      const only = chunk.value;
      chunk = await it.next();
      if (chunk.done === true) {
        stream.end(only);
        return;
      }
      if (!stream.write(only)) await drained(stream);
    }
    // Streams: each message as it comes (the next may wait for the client).
    while (chunk.done !== true) {
      if (!stream.write(chunk.value)) await drained(stream);
      if (stream.destroyed) return;
      chunk = await it.next();
    }
    stream.end();
  } finally {
    await it.return?.();
  }
}

/** An answer built once: status, headers, at most one buffer, no trailers. */
interface FixedAnswer {
  status: number;
  header: Headers;
  body: Uint8Array | undefined;
}

/** The Node header objects of answers built once (refusals), made on first use. */
const fixedHeads = new WeakMap<FixedAnswer, OutgoingHttpHeaders>();

/**
 * Writes an answer built once and shared by many calls (a refusal), its
 * headers converted once: under overload
 * most calls get it, so it costs no more than Node's own work per stream.
 */
export function respondFixed(stream: ServerHttp2Stream, answer: FixedAnswer, reqId: string): void {
  let head = fixedHeads.get(answer);
  if (head === undefined) {
    head = nodeHeaders(answer.header, { ":status": answer.status });
    fixedHeads.set(answer, head);
  }
  if (stream.destroyed) return;
  const headers = { ...head, "x-request-id": reqId };
  if (answer.body === undefined) {
    stream.respond(headers, { endStream: true });
  } else {
    stream.respond(headers);
    stream.end(answer.body);
  }
}

function drained(stream: ServerHttp2Stream): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off("drain", done);
      stream.off("close", done);
      resolve();
    };
    stream.once("drain", done);
    stream.once("close", done);
  });
}
