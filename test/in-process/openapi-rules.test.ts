import type { DescField } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ruleValues } from "../../src/contract/field-rules.js";
import { requests } from "../../src/rest/requests.js";
import { fileService } from "../support/in-process.js";

/**
 * /openapi.json says of each REST request what the protos' rules say, rule for rule, and no
 * rule more: the REST gateway checks requests with those rules (src/rest/rest-requests.ts),
 * and its document is made from them (src/rest/request-schemas.ts).
 */

const svc = await fileService();
const doc = (await (await svc.rest(null, "GET", "/openapi.json")).json()) as {
  paths: Record<string, Record<string, Operation>>;
};

interface Schema {
  [keyword: string]: unknown;
}
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema: Schema;
}
interface Operation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { content: { "application/json": { schema: Schema } } };
}

function operation(id: string): Operation {
  for (const methods of Object.values(doc.paths)) {
    for (const op of Object.values(methods)) if (op.operationId === id) return op;
  }
  throw new Error(`no operation ${id} in /openapi.json`);
}

/** The JSON Schema keywords that state `field`'s rules in REST (0 is no REST page size). */
function expectedKeywords(field: DescField): Schema {
  const out: Schema = {};
  for (const [rule, value] of ruleValues(field)) {
    if (rule === "required") out.minLength = 1;
    else if (rule === "string.max_len") out.maxLength = Number(value);
    else if (rule === "string.pattern") out.pattern = value;
    else if (rule === "int32.gte") out.minimum = Math.max(1, Number(value));
    else if (rule === "int32.lte") out.maximum = value;
    else if (rule === "enum.defined_only") {
      out.words = field.enum?.values
        .filter((v) => v.number !== 0)
        .map((v) => v.localName.toLowerCase());
    } else throw new Error(`${field}: no REST keyword for rule ${rule}`);
  }
  return out;
}

/** The constraint keywords a schema states, enum words as one list. */
function statedKeywords(schema: Schema): Schema {
  const out: Schema = {};
  for (const k of ["minLength", "maxLength", "pattern", "minimum", "maximum"]) {
    if (schema[k] !== undefined) out[k] = schema[k];
  }
  const anyOf = schema.anyOf as Schema[] | undefined;
  if (anyOf) out.words = anyOf.flatMap((s) => (s.enum as string[] | undefined) ?? [s.const]);
  return out;
}

describe.each(Object.entries(requests))("%s", (id, request) => {
  const op = operation(id);

  it.each(request.path.map(([name, field]) => [name, field] as const))(
    "path parameter %s: required, with the field's rules",
    (name, field) => {
      const param = op.parameters?.find((p) => p.in === "path" && p.name === name);
      expect(param?.required).toBe(true);
      expect(statedKeywords(param?.schema ?? {})).toEqual({
        minLength: 1,
        ...expectedKeywords(field),
      });
    },
  );

  if (request.from === "query") {
    it("query parameters: the request's other fields, each with its rules", () => {
      const params = (op.parameters ?? []).filter((p) => p.in === "query");
      expect(params.map((p) => p.name).sort()).toEqual([...request.fields.keys()].sort());
      for (const [name, field] of request.fields) {
        const param = params.find((p) => p.name === name);
        expect(param?.required, name).toBe(false);
        expect(statedKeywords(param?.schema ?? {}), name).toEqual(expectedKeywords(field));
      }
    });
  } else {
    it("body: the request's other fields, each with its rules, and no other field", () => {
      const schema = op.requestBody?.content["application/json"].schema ?? {};
      expect(schema.additionalProperties).toBe(false);
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      expect(Object.keys(properties).sort()).toEqual([...request.fields.keys()].sort());
      const required = [...request.fields]
        .filter(([, f]) => ruleValues(f).some(([rule]) => rule === "required"))
        .map(([name]) => name);
      expect(((schema.required as string[] | undefined) ?? []).sort()).toEqual(required.sort());
      for (const [name, field] of request.fields) {
        expect(statedKeywords(properties[name] ?? {}), name).toEqual(expectedKeywords(field));
      }
    });
  }
});

it("has a REST operation for every request it reads", () => {
  expect(Object.keys(requests).sort()).toEqual(
    [
      "completeSession",
      "getQuiz",
      "getSession",
      "listDueQuestions",
      "listQuizzes",
      "listSessions",
      "startSession",
      "submitAnswer",
    ].sort(),
  );
});
