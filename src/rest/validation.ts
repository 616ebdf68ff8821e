import type { FastifySchemaValidationError } from "fastify/types/schema.js";
import { errors } from "../app/errors.js";
import { MAX_PAGE_SIZE } from "../domain/session.js";

/**
 * The first schema violation of a request as `invalid_argument`, with the
 * message the use cases give for the same mistake; no input is echoed.
 */
export function validationError(violations: FastifySchemaValidationError[], part: string): Error {
  const first = violations[0];
  const field =
    first?.instancePath.split("/")[1] ??
    (typeof first?.params.missingProperty === "string" ? first.params.missingProperty : "");
  if (part === "querystring") {
    // A query parameter given twice arrives as an array of strings.
    if (first?.keyword === "type")
      return errors.invalidArgument(`${field} must be given at most once`);
    if (field === "status") return errors.invalidArgument('status must be "active" or "completed"');
    if (field === "limit") {
      return errors.invalidArgument(`limit must be an integer from 1 to ${MAX_PAGE_SIZE}`);
    }
  }
  if (part === "body") {
    if (field === "" || field === undefined) {
      return errors.invalidArgument("request body must be empty or a JSON object");
    }
    if (field === "mode")
      return errors.invalidArgument('mode must be "full", "review" or "missed"');
    return errors.invalidArgument(`${field} must be a string`);
  }
  return errors.invalidArgument(`${part} ${field} is not valid`);
}
