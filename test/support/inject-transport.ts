import type { Transport } from "@connectrpc/connect";
import type { UniversalClientFn } from "@connectrpc/connect/protocol";
import { createTransport as connectTransport } from "@connectrpc/connect/protocol-connect";
import { createTransport as grpcTransport } from "@connectrpc/connect/protocol-grpc";
import { createTransport as grpcWebTransport } from "@connectrpc/connect/protocol-grpc-web";
import type { App } from "../../src/app-server.js";

/** The RPC protocols a client speaks to the service: Connect (JSON), gRPC and gRPC-Web (binary). */
export type RpcProtocol = "connect" | "grpc" | "grpc-web";

/**
 * A Connect client transport for `protocol` whose requests go to `app.inject()`: the whole
 * service (root hooks, the edge's door, the Connect routes and the short path, interceptors)
 * without a socket. Inject speaks HTTP/1.1, so gRPC takes connect-fastify's route here; the
 * short path's gRPC route (HTTP/2 only) needs a socket.
 */
export function injectTransport(app: App, protocol: RpcProtocol): Transport {
  const options = {
    httpClient: injectClient(app),
    baseUrl: "http://in-process",
    useBinaryFormat: protocol !== "connect",
    interceptors: [],
    acceptCompression: [],
    sendCompression: null,
    compressMinBytes: Number.MAX_SAFE_INTEGER,
    readMaxBytes: Number.MAX_SAFE_INTEGER,
    writeMaxBytes: Number.MAX_SAFE_INTEGER,
  };
  if (protocol === "grpc") return grpcTransport(options);
  if (protocol === "grpc-web") return grpcWebTransport(options);
  return connectTransport(options);
}

function injectClient(app: App): UniversalClientFn {
  return async (request) => {
    const chunks: Uint8Array[] = [];
    for await (const chunk of request.body ?? []) chunks.push(chunk);
    const res = await app.inject({
      method: request.method as "POST",
      url: new URL(request.url).pathname,
      headers: Object.fromEntries(request.header),
      payload: Buffer.concat(chunks),
    });
    const header = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      for (const v of Array.isArray(value) ? value : [value]) {
        if (v !== undefined) header.append(name, String(v));
      }
    }
    const payload = res.rawPayload;
    return {
      status: res.statusCode,
      header,
      trailer: new Headers(res.trailers as Record<string, string>),
      body: (async function* () {
        if (payload.length > 0) yield new Uint8Array(payload);
      })(),
    };
  };
}
