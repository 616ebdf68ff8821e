import {
  constants,
  createServer,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type ServerOptions,
} from "node:http2";
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifyServerFactoryHandler,
  RouteGenericInterface,
} from "fastify";
import {
  HTTP2_SESSION_IDLE_MS,
  MAX_CONCURRENT_STREAMS,
  MAX_HEADER_BYTES,
  NGHTTP2_RESET_LIMIT,
} from "./limits.js";

/**
 * The Node server under the app: HTTP/2 on the connections the edge hands
 * it, TLS or not (edge/one-port.ts, which puts an HTTP/1.1 server beside it).
 */
export type AppServer = Http2Server;

/**
 * The service's Fastify instance, typed for the server it runs on so that
 * plugins and hooks need no casts (HTTP/1.1 requests' `raw` differs at run time).
 */
export type App = FastifyInstance<
  AppServer,
  Http2ServerRequest,
  Http2ServerResponse,
  FastifyBaseLogger
>;

/** A request of `App`. */
export type AppRequest = FastifyRequest<RouteGenericInterface, AppServer, Http2ServerRequest>;

/** A reply of `App`. */
export type AppReply = FastifyReply<
  RouteGenericInterface,
  AppServer,
  Http2ServerRequest,
  Http2ServerResponse
>;

/** PEM files: with them the port speaks TLS with ALPN (h2 and http/1.1), edge/one-port.ts. */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/**
 * Makes the app's HTTP/2 server (Fastify's `serverFactory`), here because
 * Fastify's types have no place for the h2c settings.
 */
export function createAppServer(handler: FastifyServerFactoryHandler<AppServer>): AppServer {
  const options: ServerOptions = {
    // ops/http2-guard.ts answers rapid reset, with ENHANCE_YOUR_CALM.
    ...NGHTTP2_RESET_LIMIT,
    settings: {
      maxHeaderListSize: MAX_HEADER_BYTES,
      // Node advertises no limit by default (2^32-1 streams on one connection).
      maxConcurrentStreams: MAX_CONCURRENT_STREAMS,
    },
  };
  const server = createServer(options, handler);
  // What Fastify does to the servers it makes itself: an idle session is closed.
  server.on("session", (session) =>
    session.setTimeout(HTTP2_SESSION_IDLE_MS, () => session.close()),
  );
  server.on("stream", (stream) => {
    // Answered while the client still sends: RST_STREAM NO_ERROR (RFC 9113 8.1)
    // frees the stream's slot; on the next turn, so the trailers go out first.
    stream.once("wantTrailers", () =>
      setImmediate(() => {
        if (!stream.closed && !stream.readableEnded) stream.close(constants.NGHTTP2_NO_ERROR);
      }),
    );
  });
  return server;
}
