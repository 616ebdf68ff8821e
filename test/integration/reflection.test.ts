import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { create, type DescMessage, fromBinary, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ServerReflectionRequest,
  ServerReflectionRequestSchema,
  type ServerReflectionResponse,
  ServerReflectionResponseSchema,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { insertQuiz, type QuizFixture } from "../support/fixtures.js";
import { startTestService, type TestService } from "../support/service.js";

let svc: TestService;
let quiz: QuizFixture;
const USER = "reflection-user";

beforeAll(async () => {
  svc = await startTestService();
  quiz = await insertQuiz(svc.db);
});
afterAll(async () => {
  await svc?.close();
});

/** `buf curl` over gRPC (h2c) with no local schema: everything comes from reflection. */
async function bufCurl(...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)("node_modules/.bin/buf", [
    "curl",
    "--protocol",
    "grpc",
    "--http2-prior-knowledge",
    ...args,
  ]);
  return stdout;
}

/** One grpc-js bidi stream to a reflection service: sends `requests`, collects the answers. */
async function reflect<Req extends DescMessage, Res extends DescMessage>(
  path: string,
  reqSchema: Req,
  resSchema: Res,
  requests: object[],
) {
  const client = new grpc.Client(new URL(svc.baseUrl).host, grpc.credentials.createInsecure());
  try {
    const call = client.makeBidiStreamRequest(
      path,
      (m: object) => Buffer.from(toBinary(reqSchema, create(reqSchema, m as never))),
      (b: Buffer) => fromBinary(resSchema, b),
    );
    const answers: unknown[] = [];
    call.on("data", (m) => answers.push(m));
    const done = new Promise<grpc.StatusObject>((resolve) => call.on("status", resolve));
    for (const r of requests) call.write(r);
    call.end();
    const status = await done;
    return { status, answers };
  } finally {
    client.close();
  }
}

const fileNames = (res: ServerReflectionResponse) =>
  res.messageResponse.case === "fileDescriptorResponse"
    ? res.messageResponse.value.fileDescriptorProto.map(
        (b) => fromBinary(FileDescriptorProtoSchema, b).name,
      )
    : [];

describe("gRPC server reflection", () => {
  it("lets buf curl list the services with no schema and no token", async () => {
    const out = await bufCurl("--list-services", svc.baseUrl);
    expect(out.trim().split("\n").sort()).toEqual([
      "grpc.health.v1.Health",
      "grpc.reflection.v1.ServerReflection",
      "grpc.reflection.v1alpha.ServerReflection",
      "practice.v1.PracticeSessionService",
      "practice.v1.QuizService",
    ]);
  });

  it("lets buf curl call QuizService/GetQuiz with no --schema", async () => {
    const out = await bufCurl(
      "-H",
      `authorization: Bearer ${await svc.token(USER)}`,
      "-d",
      JSON.stringify({ quiz_id: quiz.quizId }),
      `${svc.baseUrl}/practice.v1.QuizService/GetQuiz`,
    );
    const { quiz: content } = JSON.parse(out);
    expect(content).toMatchObject({ id: quiz.quizId, studyGuideId: quiz.studyGuideId });
    expect(content.questions.map((q: { id: string }) => q.id)).toEqual(quiz.questionIds);
    expect(out).not.toMatch(/correct/i);
  });

  it("lets buf curl call ListSessions with no --schema, over v1 and over v1alpha", async () => {
    const started = await svc.rest(USER, "POST", `/quizzes/${quiz.quizId}/sessions`);
    expect(started.status).toBe(201);
    const { id } = (await started.json()) as { id: string };
    for (const protocol of ["grpc-v1", "grpc-v1alpha"]) {
      const out = await bufCurl(
        "--reflect-protocol",
        protocol,
        "-H",
        `authorization: Bearer ${await svc.token(USER)}`,
        "-d",
        JSON.stringify({ quiz_id: quiz.quizId }),
        `${svc.baseUrl}/practice.v1.PracticeSessionService/ListSessions`,
      );
      const page = JSON.parse(out);
      expect(page.sessions).toHaveLength(1);
      expect(page.sessions[0]).toMatchObject({ id, quizId: quiz.quizId, totalQuestions: 3 });
    }
  });

  it("answers a grpc-js client: services, a file by symbol with its imports once per stream, not_found", async () => {
    const { status, answers } = await reflect(
      "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
      ServerReflectionRequestSchema,
      ServerReflectionResponseSchema,
      [
        { messageRequest: { case: "listServices", value: "" } },
        {
          messageRequest: {
            case: "fileContainingSymbol",
            value: "practice.v1.PracticeSessionService.ListSessions",
          },
        },
        {
          messageRequest: {
            case: "fileByFilename",
            value: "practice/v1/practice_session_service.proto",
          },
        },
        { messageRequest: { case: "fileContainingSymbol", value: "practice.v1.Nope" } },
      ] satisfies Partial<ServerReflectionRequest>[],
    );
    expect(status.code).toBe(grpc.status.OK);
    const [list, bySymbol, byName, missing] = answers as ServerReflectionResponse[];
    expect(list?.messageResponse.case).toBe("listServicesResponse");
    // With every file it imports, transitively: protovalidate's rules (buf/validate) and
    // the well-known types they use.
    expect(bySymbol && fileNames(bySymbol)).toEqual([
      "practice/v1/practice_session_service.proto",
      "buf/validate/validate.proto",
      "google/protobuf/descriptor.proto",
      "google/protobuf/duration.proto",
      "google/protobuf/field_mask.proto",
      "google/protobuf/timestamp.proto",
    ]);
    // Asked again on the same stream: the file itself, its imports not again.
    expect(byName && fileNames(byName)).toEqual(["practice/v1/practice_session_service.proto"]);
    expect(missing?.messageResponse).toMatchObject({
      case: "errorResponse",
      value: { errorCode: grpc.status.NOT_FOUND },
    });
    expect(missing?.originalRequest?.messageRequest.value).toBe("practice.v1.Nope");
  });

  it("answers the same over grpc.reflection.v1alpha", async () => {
    const { answers } = await reflect(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      v1alpha.ServerReflectionRequestSchema,
      v1alpha.ServerReflectionResponseSchema,
      [{ messageRequest: { case: "fileContainingSymbol", value: "grpc.health.v1.Health" } }],
    );
    const [res] = answers as v1alpha.ServerReflectionResponse[];
    expect(res?.$typeName).toBe("grpc.reflection.v1alpha.ServerReflectionResponse");
    expect(res?.messageResponse.case).toBe("fileDescriptorResponse");
    const files =
      res?.messageResponse.case === "fileDescriptorResponse"
        ? res.messageResponse.value.fileDescriptorProto
        : [];
    expect(files.map((b) => fromBinary(FileDescriptorProtoSchema, b).name)).toEqual([
      "grpc/health/v1/health.proto",
    ]);
  });
});
