import type {
  Http2Server,
  Http2ServerRequest,
  Http2ServerResponse,
  IncomingHttpHeaders,
  ServerHttp2Stream,
} from "node:http2";
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RouteGenericInterface,
} from "fastify";

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

/** Takes an HTTP/2 stream if it is a call this serves (true); false leaves it to the app. */
export type StreamTaker = (
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  rawHeaders: string[],
) => boolean;

/**
 * HTTP/2 streams served before the app's compatibility layer and router
 * (rpc/grpc-streams.ts): the edge offers each new stream to it first.
 */
export interface StreamPath {
  take: StreamTaker;
  /** From now on no stream is taken: the app answers them as it closes. */
  drain(): void;
}

declare module "fastify" {
  interface FastifyInstance {
    /** The app's stream path, if it has one (server.ts). */
    streamPath: StreamPath | null;
  }
}
