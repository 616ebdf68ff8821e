import type { DescField, DescMessage } from "@bufbuild/protobuf";
import { ScalarType } from "@bufbuild/protobuf";
import { type TSchema, Type } from "@fastify/type-provider-typebox";
import { fieldRules } from "../contract/field-rules.js";
import { restWordsOf } from "./rest-fields.js";
import type { RestRequest } from "./rest-requests.js";

/**
 * The JSON Schemas of a REST operation's request (path, query string, body), made from its
 * request message's fields and their protovalidate rules: what /openapi.json says of the
 * request is what the validation step checks (test/in-process/openapi-rules.test.ts compares
 * them rule for rule). They only describe: the REST gateway reads and checks requests with
 * rest-requests.ts, not with these.
 */
export function requestSchemas<D extends DescMessage>(
  request: RestRequest<D>,
  describe: (name: string, field: DescField) => string,
): { params?: TSchema; querystring?: TSchema; body?: TSchema } {
  const schemaOf = (name: string, field: DescField, where: "path" | "query" | "body") =>
    fieldSchema(field, where, describe(name, field));
  const params = request.path.map(([name, field]) => [name, schemaOf(name, field, "path")]);
  // A body's required fields are required properties; the rest may be left out.
  const rest = [...request.fields].map(([name, field]) => {
    const schema = schemaOf(name, field, request.from);
    const required = request.from === "body" && fieldRules(field).required;
    return [name, required ? schema : Type.Optional(schema)];
  });
  return {
    ...(params.length > 0 && { params: Type.Object(Object.fromEntries(params)) }),
    ...(request.from === "query" && rest.length > 0
      ? { querystring: Type.Object(Object.fromEntries(rest)) }
      : {}),
    ...(request.from === "body" && {
      body: Type.Object(Object.fromEntries(rest), {
        additionalProperties: false,
        description:
          "A JSON object of these fields (no body at all when none is required); a field the " +
          "operation does not have is 400.",
      }),
    }),
  };
}

/** One field's schema: its REST type (rest-fields.ts) and its rules as JSON Schema keywords. */
function fieldSchema(field: DescField, where: "path" | "query" | "body", description: string) {
  const rules = fieldRules(field);
  const keywords = <T extends object>(o: T) =>
    Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
  if (field.fieldKind === "enum") {
    return Type.Union(
      [...restWordsOf(field.enum).keys()].map((w) => Type.Literal(w)),
      { description },
    );
  }
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.STRING) {
    return Type.String(
      keywords({
        minLength: rules.required || where === "path" ? 1 : undefined,
        maxLength: rules.maxLength,
        pattern: rules.pattern,
        description,
      }),
    );
  }
  if (field.fieldKind === "scalar" && field.scalar === ScalarType.INT32) {
    // 0 means "unset" in the message: a REST call leaves the field out instead.
    const minimum = rules.minimum === undefined || rules.minimum <= 0 ? 1 : rules.minimum;
    return Type.Integer(keywords({ minimum, maximum: rules.maximum, description }));
  }
  throw new Error(`${field}: no REST form for this kind of field`);
}
