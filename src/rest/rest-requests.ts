import { create, type DescField, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { errors, type FieldViolation, InvalidRequest } from "../app/errors.js";
import { requestViolations } from "../contract/check-request.js";
import { restField } from "./rest-fields.js";
import { unknownFieldMessage } from "./unknown-field.js";

/**
 * A REST operation's request as the RPC's request message: its path parameters, then its
 * query string (GET) or its JSON body (POST), read into the message by the proto's field
 * names, and checked by the validation step every transport runs (contract/check-request.ts).
 */
export interface RestRequest<D extends DescMessage> {
  readonly schema: D;
  /** The path's parameters by the route's names, with the field each fills. */
  readonly path: readonly (readonly [name: string, field: DescField])[];
  /** Where the other fields come from. */
  readonly from: "query" | "body";
  /** The fields they fill, by name. */
  readonly fields: ReadonlyMap<string, DescField>;
  /** The fields the REST operation names otherwise (the path's `id`: `session_id`). */
  readonly names: ReadonlyMap<DescField, string>;
}

/** The REST form of `schema`'s requests: `path` maps the route's parameters to fields. */
export function restRequest<D extends DescMessage>(
  schema: D,
  from: "query" | "body",
  path: Record<string, string> = {},
): RestRequest<D> {
  const byName = (name: string) => {
    const field = schema.fields.find((f) => f.name === name);
    if (field === undefined) throw new Error(`${schema.typeName} has no field ${name}`);
    return field;
  };
  const pathFields = Object.entries(path).map(([name, field]) => [name, byName(field)] as const);
  const taken = new Set(pathFields.map(([, f]) => f));
  const fields = new Map(schema.fields.filter((f) => !taken.has(f)).map((f) => [f.name, f]));
  const names = new Map(
    pathFields.filter(([name, field]) => name !== field.name).map(([name, field]) => [field, name]),
  );
  return { schema, path: pathFields, from, fields, names };
}

/** What a REST request holds, as Fastify parsed it. */
interface RestInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

/**
 * The request message of a REST call, or `invalid_argument` naming every mistake at once:
 * what does not read as its field (a word that is no status, a body field the operation does
 * not have, a query parameter given twice), then what breaks the proto's rules. Fields are
 * named as the REST operation names them (`id` for a session's id in the path).
 */
export function readRequest<D extends DescMessage>(
  request: RestRequest<D>,
  input: RestInput,
): MessageShape<D> {
  const message = create(request.schema);
  const values = message as unknown as Record<string, unknown>;
  const params = (input.params ?? {}) as Record<string, unknown>;
  for (const [name, field] of request.path) values[field.localName] = params[name];
  const found: (FieldViolation & { order: number })[] = [];
  const misread = new Set<DescField>();
  const refuse = (field: DescField | undefined, name: string, rule: string, text: string) => {
    if (field !== undefined) misread.add(field);
    found.push({
      field: name,
      rule,
      message: text,
      order: field?.number ?? Number.MAX_SAFE_INTEGER,
    });
  };
  // No body at all is a body without fields; JSON's null is no object.
  const given = request.from === "query" ? input.query : input.body === undefined ? {} : input.body;
  if (typeof given !== "object" || given === null || Array.isArray(given)) {
    throw errors.invalidArgument("request body must be empty or a JSON object");
  }
  for (const [name, raw] of Object.entries(given)) {
    const field = request.fields.get(name);
    if (field === undefined) {
      // Query parameters the operation does not have are left alone (a cache buster, say).
      if (request.from === "body")
        refuse(undefined, name, "rest.known_field", unknownFieldMessage(name, request.fields));
      continue;
    }
    if (request.from === "query" && typeof raw !== "string") {
      refuse(field, name, "rest.once", `${name} must be given at most once`);
      continue;
    }
    const read = restField(field, raw, request.from);
    if ("value" in read) values[field.localName] = read.value;
    else refuse(field, name, read.rule, read.message);
  }
  for (const v of requestViolations(request.schema, message, misread, request.names)) {
    const first = v.field[0];
    found.push({
      field: (first?.kind === "field" && request.names.get(first)) || pathToString(v.field),
      rule: v.ruleId,
      message: v.message,
      order: first?.kind === "field" ? first.number : Number.MAX_SAFE_INTEGER,
    });
  }
  if (found.length === 0) return message;
  throw new InvalidRequest(
    found
      .sort((a, b) => a.order - b.order)
      .filter(
        (v, i, all) => all.findIndex((w) => w.field === v.field && w.message === v.message) === i,
      )
      .map(({ field, rule, message }) => ({ field, rule, message })),
  );
}
