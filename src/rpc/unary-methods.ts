import type { DescService } from "@bufbuild/protobuf";
import {
  type ConnectRouter,
  createConnectRouter,
  createServiceImplSpec,
  type Interceptor,
} from "@connectrpc/connect";
import {
  createMethodSerializationLookup,
  type UniversalHandler,
  validateUniversalHandlerOptions,
} from "@connectrpc/connect/protocol";
import { compileBinaryWriter } from "./proto-binary.js";
import { compileJsonWriter } from "./proto-json.js";
import type { Answer, Options, UnarySpec } from "./short-path-call.js";
import { connectAnswer } from "./short-path-connect.js";
import { grpcAnswer } from "./short-path-grpc.js";

/** One unary method as the paths of our own serve it, with Connect's own handler behind them. */
export interface UnaryMethod {
  spec: UnarySpec;
  /** Connect's own handler, for what our answers leave to it. */
  fallback: UniversalHandler;
  /** The answer Connect's gRPC handler gives (binary, over HTTP/2). */
  grpc: Answer;
  /** The answer Connect's handler gives a unary Connect POST. */
  connect: Answer;
}

/**
 * The unary methods of `routes`, by path ("/pkg.Service/Method"), each with
 * its answers and Connect's own handler, built with the options and
 * interceptors Connect's router runs them under; and those options,
 * validated as Connect validates them.
 */
export function unaryMethods(
  routes: (router: ConnectRouter) => void,
  connectOptions: Parameters<typeof createConnectRouter>[0],
  interceptors: Interceptor[],
): { opt: Options; methods: Map<string, UnaryMethod> } {
  const opt = validateUniversalHandlerOptions({ ...connectOptions, interceptors });
  // Connect's per-call gate and its shutdown signal have no place here: the
  // edge owns both (edge/api-calls.ts, edge/one-port.ts).
  if (opt.requestGate !== undefined || opt.shutdownSignal !== undefined) {
    throw new Error("our unary paths do not honour requestGate or shutdownSignal");
  }
  const specs = new Map<string, UnarySpec>();
  const router = createConnectRouter({ ...connectOptions, interceptors: opt.interceptors });
  // Records each service's methods as it registers them on Connect's router.
  const recorder: ConnectRouter = {
    handlers: router.handlers,
    service(service: DescService, impl: never, o?: never) {
      const spec = createServiceImplSpec(service, impl);
      for (const method of Object.values(spec.methods)) {
        if (method.kind === "unary")
          specs.set(`/${service.typeName}/${method.method.name}`, method);
      }
      router.service(service, impl, o);
      return recorder;
    },
    rpc: (...args: never[]) => {
      (router.rpc as (...a: never[]) => ConnectRouter)(...args);
      return recorder;
    },
  } as ConnectRouter;
  routes(recorder);
  const fallbacks = new Map(router.handlers.map((h) => [h.requestPath, h]));
  const methods = new Map<string, UnaryMethod>();
  for (const [path, spec] of specs) {
    const serialization = createMethodSerializationLookup(
      spec.method,
      opt.binaryOptions,
      opt.jsonOptions,
      opt,
    );
    const json = compileJsonWriter(spec.method.output, opt.jsonOptions);
    const binary = compileBinaryWriter(spec.method.output);
    methods.set(path, {
      spec,
      fallback: fallbacks.get(path) as UniversalHandler,
      grpc: grpcAnswer(opt, binary),
      connect: connectAnswer(opt, serialization, json),
    });
  }
  return { opt, methods };
}
