import type { Http2Server, Http2ServerRequest, Http2ServerResponse } from "node:http2";
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
