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
  options: grpc.ChannelOptions = {},
) {
  // grpc-js's own typed call: no generated client, no method table to cast.
  const client = new grpc.Client(address, credentials, options);
  const methods: Record<string, unknown> = {};
  for (const method of service.methods) {
    methods[method.localName] = (
      request: MessageInitShape<DescMessage>,
      headers: Record<string, string> = {},
    ) =>
      new Promise((resolve, reject) => {
        const metadata = new grpc.Metadata();
        for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
        client.makeUnaryRequest(
          `/${service.typeName}/${method.name}`,
          (m: MessageShape<DescMessage>) => Buffer.from(toBinary(method.input, m)),
          (b: Buffer) => fromBinary(method.output, b),
          create(method.input, request),
          metadata,
          (err, res) => (err ? reject(err) : resolve(res)),
        );
      });
  }
  return {
    // Filled by name in the loop above: the mapped type is what it holds.
    ...(methods as UnaryMethods<S>),
    close: () => client.close(),
  };
}
