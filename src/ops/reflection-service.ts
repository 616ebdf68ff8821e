import {
  create,
  createFileRegistry,
  type DescFile,
  type DescService,
  type FileRegistry,
  fromBinary,
  type MessageInitShape,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ServiceImpl } from "@connectrpc/connect";
import {
  type ServerReflectionRequest,
  ServerReflectionRequestSchema,
  type ServerReflectionResponse,
  ServerReflectionResponseSchema,
  type ServerReflection as V1,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  type ServerReflection as V1alpha,
  ServerReflectionRequestSchema as V1alphaRequestSchema,
  ServerReflectionResponseSchema as V1alphaResponseSchema,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/**
 * `grpc.reflection.v1.ServerReflection` on protobuf-es's registry: lists
 * `services` and answers file requests with serialized FileDescriptorProtos,
 * so that `buf curl` (and any reflection client) needs no local schema. Each stream remembers
 * the files it already sent and sends every file once, as the protocol allows.
 * `v1alpha` is the same service under its pre-standard name, still what many clients try
 * first: the two versions' messages are identical on the wire, so each message is re-read
 * as v1 and the answer re-read as v1alpha.
 */
export function reflectionServices(
  registry: FileRegistry,
  services: readonly DescService[],
): { v1: ServiceImpl<typeof V1>; v1alpha: ServiceImpl<typeof V1alpha> } {
  /** One stream's answers, in order; `toV1` and `fromV1` read the version's messages. */
  async function* answers<Request, Response>(
    requests: AsyncIterable<Request>,
    toV1: (req: Request) => ServerReflectionRequest,
    fromV1: (res: ServerReflectionResponse) => Response,
  ): AsyncGenerator<Response> {
    const sent = new Set<string>();
    for await (const req of requests) yield fromV1(answer(registry, services, sent, toV1(req)));
  }
  return {
    v1: {
      serverReflectionInfo: (requests) =>
        answers(
          requests,
          (req) => req,
          (res) => res,
        ),
    },
    v1alpha: {
      serverReflectionInfo: (requests) =>
        answers(
          requests,
          (req) => fromBinary(ServerReflectionRequestSchema, toBinary(V1alphaRequestSchema, req)),
          (res) => fromBinary(V1alphaResponseSchema, toBinary(ServerReflectionResponseSchema, res)),
        ),
    },
  };
}

/** A registry of `files` and everything they import, for `reflectionService`. */
export function reflectionRegistry(...files: DescFile[]): FileRegistry {
  const all = new Map<string, DescFile>();
  const visit = (f: DescFile) => {
    if (all.has(f.proto.name)) return;
    for (const dep of f.dependencies) visit(dep);
    all.set(f.proto.name, f);
  };
  for (const f of files) visit(f);
  return createFileRegistry(
    create(FileDescriptorSetSchema, { file: [...all.values()].map((f) => f.proto) }),
  );
}

type Answer = MessageInitShape<typeof ServerReflectionResponseSchema>["messageResponse"];

function answer(
  registry: FileRegistry,
  services: readonly DescService[],
  sent: Set<string>,
  req: ServerReflectionRequest,
): ServerReflectionResponse {
  const reply = (messageResponse: Answer) =>
    create(ServerReflectionResponseSchema, {
      validHost: req.host,
      originalRequest: req,
      messageResponse,
    });
  const notFound = (what: string) =>
    reply({
      case: "errorResponse",
      value: { errorCode: Code.NotFound, errorMessage: `${what} not found` },
    });
  const files = (file: DescFile | undefined, what: string) =>
    file === undefined
      ? notFound(what)
      : reply({
          case: "fileDescriptorResponse",
          value: { fileDescriptorProto: withDependencies(file, sent) },
        });

  const { messageRequest: r } = req;
  switch (r.case) {
    case "listServices":
      return reply({
        case: "listServicesResponse",
        value: { service: services.map((s) => ({ name: s.typeName })) },
      });
    case "fileByFilename":
      return files(registry.getFile(r.value), `file ${r.value}`);
    case "fileContainingSymbol":
      return files(fileOfSymbol(registry, r.value), `symbol ${r.value}`);
    case "fileContainingExtension": {
      const message = registry.getMessage(r.value.containingType);
      const ext = message && registry.getExtensionFor(message, r.value.extensionNumber);
      return files(ext?.file, `extension ${r.value.extensionNumber} of ${r.value.containingType}`);
    }
    case "allExtensionNumbersOfType": {
      if (registry.getMessage(r.value) === undefined) return notFound(`type ${r.value}`);
      const numbers: number[] = [];
      for (const desc of registry) {
        if (desc.kind === "extension" && desc.extendee.typeName === r.value) {
          numbers.push(desc.number);
        }
      }
      return reply({
        case: "allExtensionNumbersResponse",
        value: { baseTypeName: r.value, extensionNumber: numbers },
      });
    }
    default:
      return reply({
        case: "errorResponse",
        value: { errorCode: Code.InvalidArgument, errorMessage: "empty reflection request" },
      });
  }
}

/** The file declaring a type, a service, or a method (`pkg.Service.Method`). */
function fileOfSymbol(registry: FileRegistry, symbol: string): DescFile | undefined {
  const desc = registry.get(symbol);
  if (desc !== undefined) return desc.file;
  const parent = registry.get(symbol.slice(0, Math.max(0, symbol.lastIndexOf("."))));
  return parent?.kind === "service" || parent?.kind === "message" ? parent.file : undefined;
}

/**
 * `file` and its imports, transitively, minus imports this stream already
 * sent. The file asked for always goes, as in grpc-go: a client may ask twice.
 */
function withDependencies(file: DescFile, sent: Set<string>): Uint8Array[] {
  const out: Uint8Array[] = [];
  const visit = (f: DescFile, asked: boolean) => {
    if (sent.has(f.proto.name) && !asked) return;
    sent.add(f.proto.name);
    out.push(toBinary(FileDescriptorProtoSchema, f.proto));
    for (const dep of f.dependencies) visit(dep, false);
  };
  visit(file, true);
  return out;
}
