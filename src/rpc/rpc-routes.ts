import type { JsonReadOptions, JsonWriteOptions } from "@bufbuild/protobuf";
import {
  type ConnectRouter,
  createConnectRouter,
  createMethodImplSpec,
  createServiceImplSpec,
  type Interceptor,
  type MethodImplSpec,
} from "@connectrpc/connect";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { connectUnaryPath } from "./connect-unary.js";
import type { ShedGuard } from "./early-admission.js";
import { grpcUnaryPath } from "./grpc-unary.js";
import type { UnaryPath } from "./unary-call.js";

type JsonOptions = Partial<JsonReadOptions & JsonWriteOptions>;

/** A set of Connect services with the interceptors they run under. */
export interface RpcRoutes {
  routes: (router: ConnectRouter) => void;
  interceptors: Interceptor[];
  /** Admission control of the group's unary calls, for the adapters to shed before decoding. */
  shedGuard?: ShedGuard;
}

export interface RpcTable {
  /** Connect's handler per procedure path: every protocol, every kind of call. */
  handlers: Map<string, UniversalHandler>;
  /** The short path per unary procedure path: unary gRPC and Connect POSTs. */
  unary: Map<string, UnaryPath>;
  /** The shed guard per unary procedure path under admission control (early-admission.ts). */
  shedGuards: Map<string, ShedGuard>;
}

/**
 * Connect's routers for `groups` (the same options as the Fastify plugin's),
 * plus a short path for each unary method: gRPC (grpc-unary.ts) or Connect
 * (connect-unary.ts) by content type. Methods registered with options of
 * their own get no short path: Connect's handler applies those.
 */
export function buildRpcTable(
  groups: RpcRoutes[],
  options: { readMaxBytes: number; compressMinBytes: number; jsonOptions?: JsonOptions },
): RpcTable {
  const table: RpcTable = { handlers: new Map(), unary: new Map(), shedGuards: new Map() };
  const acceptCompression = [compressionGzip, compressionBrotli];
  for (const group of groups) {
    const router = createConnectRouter({
      ...options,
      interceptors: group.interceptors,
      acceptCompression,
    });
    const note = (spec: MethodImplSpec) => {
      if (spec.kind !== "unary") return;
      const pathOptions = { ...options, acceptCompression };
      const grpc = grpcUnaryPath(spec, group.interceptors, pathOptions);
      const connect = connectUnaryPath(spec, group.interceptors, pathOptions);
      const path = `/${spec.method.parent.typeName}/${spec.method.name}`;
      table.unary.set(path, (call) =>
        call.header.get("content-type")?.startsWith("application/grpc")
          ? grpc(call)
          : connect(call),
      );
      if (group.shedGuard) table.shedGuards.set(path, group.shedGuard);
    };
    const noting: ConnectRouter = {
      get handlers() {
        return router.handlers;
      },
      service(service, impl, opts) {
        router.service(service, impl, opts);
        if (opts === undefined) {
          for (const spec of Object.values(createServiceImplSpec(service, impl).methods))
            note(spec);
        }
        return noting;
      },
      rpc(method, impl, opts) {
        router.rpc(method, impl, opts);
        if (opts === undefined) note(createMethodImplSpec(method, impl) as MethodImplSpec);
        return noting;
      },
    };
    group.routes(noting);
    for (const handler of router.handlers) table.handlers.set(handler.requestPath, handler);
  }
  return table;
}
