import {
  create,
  type DescMessage,
  type DescService,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";

type UnaryMethods<S extends DescService> = {
  [K in keyof S["method"]]: S["method"][K] extends {
    input: infer I extends DescMessage;
    output: infer O extends DescMessage;
  }
    ? (request: MessageInitShape<I>, metadata?: Record<string, string>) => Promise<MessageShape<O>>
    : never;
};

/**
 * A real gRPC client (@grpc/grpc-js over h2c, insecure credentials) for a
 * protobuf-es service descriptor: what a grpc-js user of the service runs.
 * Rejects with grpc-js's ServiceError (`code` is a grpc.status).
 */
export function createGrpcClient<S extends DescService>(
  service: S,
  address: string,
  credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
) {
  const definition: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: false,
      responseStream: false,
      requestSerialize: (m: unknown) =>
        Buffer.from(toBinary(method.input, m as MessageShape<DescMessage>)),
      requestDeserialize: (b: Buffer) => fromBinary(method.input, b),
      responseSerialize: (m: unknown) =>
        Buffer.from(toBinary(method.output, m as MessageShape<DescMessage>)),
      responseDeserialize: (b: Buffer) => fromBinary(method.output, b),
    };
  }
  const Client = grpc.makeGenericClientConstructor(definition, service.name);
  const client = new Client(address, credentials) as unknown as Record<
    string,
    (
      req: unknown,
      md: grpc.Metadata,
      cb: (err: grpc.ServiceError | null, res: unknown) => void,
    ) => void
  >;
  const methods: Record<string, unknown> = {};
  for (const method of service.methods) {
    methods[method.localName] = (
      request: MessageInitShape<DescMessage>,
      headers: Record<string, string> = {},
    ) =>
      new Promise((resolve, reject) => {
        const metadata = new grpc.Metadata();
        for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
        const call = client[method.localName];
        if (!call) throw new Error(`no method ${method.localName}`);
        call.call(client, create(method.input, request), metadata, (err, res) =>
          err ? reject(err) : resolve(res),
        );
      });
  }
  return {
    ...(methods as UnaryMethods<S>),
    close: () => (client as unknown as grpc.Client).close(),
  };
}
