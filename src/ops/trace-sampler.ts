import { type Attributes, type Context, type Link, SpanKind, trace } from "@opentelemetry/api";
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  SamplingDecision,
  type SamplingResult,
  TraceIdRatioBasedSampler,
} from "@opentelemetry/sdk-trace";
import type { TracingConfig } from "../config.js";

/** The sampler OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG name. */
export function configuredSampler({ sampler, ratio }: TracingConfig): Sampler {
  switch (sampler) {
    case "always_on":
      return new AlwaysOnSampler();
    case "always_off":
      return new AlwaysOffSampler();
    case "traceidratio":
      return new TraceIdRatioBasedSampler(ratio);
    case "parentbased_always_off":
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case "parentbased_traceidratio":
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * Wraps the configured sampler for the service's own spans:
 * - an SQL statement outside any span (the relay's polls, health probes, a
 *   metrics scrape's backlog count) is not a trace of its own: ten polls a
 *   second would bury the calls' traces;
 * - SQL spans get `db.operation.name` (SELECT, INSERT...), which the mysql2
 *   instrumentation leaves out, from the span's name (the statement's verb).
 */
export class ServiceSampler implements Sampler {
  constructor(private readonly inner: Sampler) {}

  shouldSample(
    context: Context,
    traceId: string,
    spanName: string,
    spanKind: SpanKind,
    attributes: Attributes,
    links: Link[],
  ): SamplingResult {
    const sql = spanKind === SpanKind.CLIENT && attributes["db.system.name"] !== undefined;
    if (!sql)
      return this.inner.shouldSample(context, traceId, spanName, spanKind, attributes, links);
    if (trace.getSpanContext(context) === undefined)
      return { decision: SamplingDecision.NOT_RECORD };
    const result = this.inner.shouldSample(context, traceId, spanName, spanKind, attributes, links);
    if (result.decision === SamplingDecision.NOT_RECORD) return result;
    return {
      ...result,
      attributes: {
        ...result.attributes,
        "db.operation.name": spanName.toUpperCase(),
        // The name before the stable conventions, which many back ends still key on.
        "db.system": attributes["db.system.name"],
      },
    };
  }

  toString(): string {
    return `ServiceSampler{${this.inner.toString()}}`;
  }
}
