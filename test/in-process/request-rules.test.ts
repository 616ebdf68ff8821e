import type { DescField, DescMethodUnary } from "@bufbuild/protobuf";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PracticeSessionService } from "../../gen/practice/v1/practice_session_service_pb.js";
import { QuizService } from "../../gen/practice/v1/quiz_service_pb.js";
import type { App } from "../../src/app-server.js";
import { createAuthenticator } from "../../src/auth/authenticator.js";
import { signToken } from "../../src/auth/tokens.js";
import { admissionConfig } from "../../src/config.js";
import { FakeClock } from "../../src/domain/clock.js";
import { Admission, type Slot } from "../../src/ops/admission.js";
import { requests } from "../../src/rest/requests.js";
import { buildApp } from "../../src/server.js";
import { createTestDatabase, type TestDatabase } from "../support/database.js";
import { injectTransport, type RpcProtocol } from "../support/inject-transport.js";
import { caseName, RULE_CASES, type RuleCase, requestWith } from "../support/rule-cases.js";
import { TEST_SECRET } from "../support/service.js";
import { defaultAppSettings } from "../support/settings.js";

/**
 * Every rule the protos state, broken on its own, on every transport: REST (the gateway reads
 * the request into the RPC's message), Connect, gRPC and gRPC-Web, with the short path on and
 * off. Each is one `invalid_argument` naming the field and the rule, before admission takes a
 * slot.
 */

/** Admission that counts the slots it is asked for. */
class CountingAdmission extends Admission {
  runs = 0;
  override run<T>(slot: Slot, work: () => Promise<T>): Promise<T> {
    this.runs++;
    return super.run(slot, work);
  }
}

interface Side {
  app: App;
  admission: CountingAdmission;
}

let database: TestDatabase;
const clock = new FakeClock(new Date());
const sides: Record<"short path on" | "short path off", Side> = {} as never;
const headers = async () => ({
  authorization: `Bearer ${await signToken(TEST_SECRET, "rules", { now: clock.now() })}`,
});

beforeAll(async () => {
  database = await createTestDatabase();
  for (const rpcShortPath of [true, false]) {
    const admission = new CountingAdmission(admissionConfig({}, 10));
    const app = await buildApp({
      ...defaultAppSettings(),
      db: database.db,
      clock,
      authenticator: createAuthenticator({ secret: TEST_SECRET }, clock),
      logger: pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" }),
      admission,
      rpcShortPath,
    });
    sides[rpcShortPath ? "short path on" : "short path off"] = { app, admission };
  }
});
afterAll(async () => {
  for (const side of Object.values(sides)) await side.app.close();
  await database?.drop();
});

/** What a caller learns of a refusal: its code, message, and each violation's field and rule. */
interface Refusal {
  code: string;
  message: string;
  violations: { field: string; rule: string; message: string }[];
}

async function viaRpc(side: Side, protocol: RpcProtocol, c: RuleCase, value = c.value) {
  const transport = injectTransport(side.app, protocol);
  const message = requestWith(c.method.input, c.field, value);
  const err = await transport
    .unary(c.method as DescMethodUnary, undefined, undefined, await headers(), message as never)
    .then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  return refusalOf(err);
}

function refusalOf(err: ConnectError | undefined): Refusal {
  if (err === undefined) return { code: "ok", message: "", violations: [] };
  const [details] = err.findDetails(ViolationsSchema);
  return {
    code: Code[err.code],
    message: err.rawMessage,
    violations: (details?.violations ?? []).map((v) => ({
      field: v.field?.elements.map((e) => e.fieldName).join(".") ?? "",
      rule: v.ruleId,
      message: v.message,
    })),
  };
}

/** The REST operation of each RPC: its method and path. */
const REST: Record<
  string,
  { method: "GET" | "POST"; path: (p: Record<string, string>) => string }
> = {
  ListQuizzes: { method: "GET", path: () => "/quizzes" },
  GetQuiz: { method: "GET", path: (p) => `/quizzes/${p.quiz_id}` },
  ListSessions: { method: "GET", path: (p) => `/quizzes/${p.quiz_id}/sessions` },
  StartSession: { method: "POST", path: (p) => `/quizzes/${p.quiz_id}/sessions` },
  ListDueQuestions: { method: "GET", path: (p) => `/quizzes/${p.quiz_id}/review` },
  GetSession: { method: "GET", path: (p) => `/sessions/${p.id}` },
  SubmitAnswer: { method: "POST", path: (p) => `/sessions/${p.id}/answers` },
  CompleteSession: { method: "POST", path: (p) => `/sessions/${p.id}/complete` },
};

/** A field's value as REST writes it: an enum's value as its word ("nope" for none). */
function restValue(field: DescField, value: unknown): unknown {
  if (field.fieldKind !== "enum") return value;
  const known = field.enum.values.find((v) => v.number === value);
  return known ? known.localName.toLowerCase() : "nope";
}

/** The REST call of `c`'s request: the path's parameters, then the query or the body. */
function restCall(c: RuleCase) {
  const request = requests[c.method.localName as keyof typeof requests];
  const message = requestWith(c.method.input, c.field, c.value);
  const params = Object.fromEntries(
    request.path.map(([name, f]) => [name, encodeURIComponent(String(message[f.localName]))]),
  );
  const rest: Record<string, unknown> = {};
  for (const [name, f] of request.fields) {
    if (f === c.field || (request.from === "body" && typeof message[f.localName] === "string")) {
      rest[name] = restValue(f, message[f.localName]);
    }
  }
  const operation = REST[c.method.name];
  if (operation === undefined) throw new Error(`no REST operation for ${c.method.name}`);
  const query = new URLSearchParams(rest as Record<string, string>).toString();
  return {
    method: operation.method,
    url: operation.path(params) + (request.from === "query" && query ? `?${query}` : ""),
    body: request.from === "body" ? JSON.stringify(rest) : undefined,
    field: request.names.get(c.field) ?? c.field.name,
  };
}

async function viaRest(side: Side, call: ReturnType<typeof restCall>) {
  const res = await side.app.inject({
    method: call.method,
    url: call.url,
    headers: {
      ...(await headers()),
      ...(call.body === undefined ? {} : { "content-type": "application/json" }),
    },
    payload: call.body,
  });
  return { status: res.statusCode, body: res.json() as Record<string, unknown> };
}

describe.each(["short path on", "short path off"] as const)("%s", (sideName) => {
  const side = () => sides[sideName];

  describe.each(["connect", "grpc", "grpc-web"] as const)("over %s", (protocol) => {
    it.each(RULE_CASES.filter((c) => c.wire === "any").map((c) => [caseName(c), c]))(
      "%s: invalid_argument naming the field and the rule, before admission",
      async (_, c) => {
        const before = side().admission.runs;
        const refusal = await viaRpc(side(), protocol, c as RuleCase);
        expect(refusal.code).toBe("InvalidArgument");
        const { field, rule } = c as RuleCase;
        expect(refusal.violations.map((v) => v.field)).toEqual(
          refusal.violations.map(() => field.name),
        );
        expect(refusal.violations.map((v) => v.rule)).toContain(rule);
        expect(refusal.message).toBe(refusal.violations[0]?.message);
        expect(side().admission.runs).toBe(before);
      },
    );
  });

  describe("over REST", () => {
    const where = (c: RuleCase) => {
      const request = requests[c.method.localName as keyof typeof requests];
      return request.path.some(([, f]) => f === c.field) ? "path" : request.from;
    };
    const restCases = RULE_CASES.filter((c) =>
      // A path's segment is never empty.
      c.wire === "any" ? !(where(c) === "path" && c.rule === "required") : where(c) === "body",
    ).map((c) => [caseName(c), c, restCall(c)] as const);
    it.each(restCases)(
      "%s: 400 invalid_argument naming the field in errors, before admission",
      async (_, _c, call) => {
        const before = side().admission.runs;
        const { status, body } = await viaRest(side(), call);
        expect(status).toBe(400);
        expect(body).toMatchObject({ code: "invalid_argument" });
        const errors = body.errors as { field: string; message: string }[];
        expect(errors.map((e) => e.field)).toEqual([call.field]);
        expect(body.detail).toBe(errors[0]?.message);
        expect(side().admission.runs).toBe(before);
      },
    );
  });
});

it("has a case for every RPC's request and every kind of rule", () => {
  const methods = [...PracticeSessionService.methods, ...QuizService.methods].map((m) => m.name);
  expect(new Set(RULE_CASES.map((c) => c.method.name))).toEqual(new Set(methods));
  expect(new Set(RULE_CASES.map((c) => c.rule))).toEqual(
    new Set([
      "required",
      "string.max_len",
      "string.pattern",
      "int32.gte_lte",
      "enum.defined_only",
      "well_formed_unicode",
    ]),
  );
});
