import { SerializerSelector } from "@fastify/fast-json-stringify-compiler";
import type { FastifyServerOptions } from "fastify";

type Schema = { [key: string]: unknown };

const SCALARS = new Set(["string", "integer", "number", "boolean"]);

const isSchema = (x: unknown): x is Schema => typeof x === "object" && x !== null;

/**
 * A response schema as fast-json-stringify is given it: the same JSON, written
 * with less work per value. The schemas themselves (validation, OpenAPI) are
 * unchanged.
 * - A time (`format: "date-time"`) is written without escaping (the library's
 *   `unsafe` format): its value is an IsoTime, which only isoTime writes, from
 *   digits and "-T:.Z" (schemas.ts types it so).
 * - A nullable scalar, anyOf [T, null], becomes type [T, "null"]: a test for
 *   null instead of a validator run on each value to choose the branch.
 */
export function forSerializing(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forSerializing);
  if (!isSchema(schema)) return schema;
  const nullable = nullableScalar(schema);
  if (nullable !== undefined) {
    const { anyOf: _, ...rest } = schema;
    const scalar = forSerializing(nullable) as Schema;
    return { ...rest, ...scalar, type: [scalar.type, "null"] };
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === "properties" || key === "$defs" ? mapValues(value) : forSerializing(value);
  }
  if (out.type === "string" && out.format === "date-time") out.format = "unsafe";
  return out;
}

/** T of a schema that is exactly anyOf [T, null] with T a plain scalar. */
function nullableScalar(schema: Schema): Schema | undefined {
  const anyOf = schema.anyOf;
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return undefined;
  const [a, b] = anyOf as unknown[];
  const isNull = (x: unknown) => isSchema(x) && x.type === "null" && Object.keys(x).length === 1;
  const scalar = isNull(b) ? a : isNull(a) ? b : undefined;
  if (!isSchema(scalar) || typeof scalar.type !== "string" || !SCALARS.has(scalar.type))
    return undefined;
  if ("anyOf" in scalar || "oneOf" in scalar || "allOf" in scalar || "const" in scalar)
    return undefined;
  return scalar;
}

function mapValues(value: unknown): unknown {
  if (!isSchema(value)) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, forSerializing(v)]));
}

/** Fastify's own serializer compiler, given each response schema through `forSerializing`. */
export const serializerCompilers: NonNullable<
  NonNullable<FastifyServerOptions["schemaController"]>["compilersFactory"]
> = {
  buildSerializer: (externalSchemas, options) => {
    const build = SerializerSelector()(externalSchemas, options);
    return (route) => build({ ...route, schema: forSerializing(route.schema) as Schema });
  },
};
