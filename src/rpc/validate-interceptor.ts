import type { Interceptor } from "@connectrpc/connect";
import { InvalidRequest } from "../app/errors.js";
import { invalidRequest, withViolationsDetail } from "../contract/check-request.js";

/**
 * Refuses a unary call whose request breaks the rules of its proto with one `invalid_argument`
 * naming every violation (contract/check-request.ts); put it before the call's admission
 * (call-interceptor.ts), so that an invalid request never takes a slot. A refusal of fields by
 * the use case (a cursor it cannot read, a question not in the session) gets the same
 * `buf.validate.Violations` detail.
 */
export function validateInterceptor(): Interceptor {
  return (next) => async (req) => {
    if (req.stream) return next(req);
    const invalid = invalidRequest(req.method.input, req.message);
    if (invalid !== undefined) throw invalid;
    try {
      return await next(req);
    } catch (err) {
      if (err instanceof InvalidRequest) withViolationsDetail(req.method.input, err);
      throw err;
    }
  };
}
