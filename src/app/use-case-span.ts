import { Code, ConnectError } from "@connectrpc/connect";
import { type Span, SpanStatusCode, trace } from "@opentelemetry/api";
import { tracer } from "../tracer.js";
import { meaningOf } from "./codes.js";

/** Set by ops/tracing.ts when the SDK starts (and by tests that trace). */
let enabled = false;

/** Turns use-case spans on: call once an OpenTelemetry SDK is registered. */
export function enableUseCaseSpans(on = true): void {
  enabled = on;
}

/**
 * How a class of use cases runs one: `name` in its span (inUseCaseSpan) on what `forCall`
 * makes of the call's signal, refused at once when that signal has aborted already.
 */
export function useCaseRunner<C>(forCall: (signal: AbortSignal | undefined) => C) {
  return <T>(name: string, signal: AbortSignal | undefined, work: (c: C) => Promise<T>) => {
    if (signal?.aborted) return Promise.reject<T>(signal.reason);
    const c = forCall(signal);
    return inUseCaseSpan(name, () => work(c));
  };
}

/**
 * Runs a use case in a span of its own named after it (`startSession`), under
 * the call's SERVER span, with the SQL statements it runs under it. A failure
 * is recorded by its Connect code (`error.type`), never its message. With
 * tracing off, OpenTelemetry's no-op API makes this a plain call.
 */
export function inUseCaseSpan<T>(name: string, run: () => Promise<T>): Promise<T> {
  // Tracing off: not even the no-op API's work. Under a call that is not
  // sampled no child is either (every standard sampler decides alike for
  // one trace): skip making one.
  if (!enabled || trace.getActiveSpan()?.isRecording() === false) return run();
  return tracer.startActiveSpan(name, async (span: Span) => {
    try {
      return await run();
    } catch (err) {
      if (span.isRecording()) {
        // The service's failure, not the caller's, as on the server span (app/codes.ts).
        const meaning = meaningOf(err instanceof ConnectError ? err.code : Code.Unknown);
        span.setAttribute("error.type", meaning.name);
        if (meaning.serverFault)
          span.setStatus({ code: SpanStatusCode.ERROR, message: meaning.name });
      }
      throw err;
    } finally {
      span.end();
    }
  });
}
