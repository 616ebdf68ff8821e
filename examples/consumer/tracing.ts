/**
 * OpenTelemetry for the consumer, as for the service: on when an OTLP
 * endpoint or OTEL_TRACES_EXPORTER (otlp, console) is set, configured by the
 * standard OTEL_* variables; otherwise nothing is loaded. Only the consumer's
 * own spans: no instrumentation, so no module hooks are needed.
 */
export async function startTracing(): Promise<() => Promise<void>> {
  const env = process.env;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? "").split(",").map((e) => e.trim());
  const on =
    env.OTEL_SDK_DISABLED !== "true" &&
    !exporters.includes("none") &&
    (Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) ||
      exporters.includes("otlp") ||
      exporters.includes("console"));
  if (!on) return async () => {};
  const { NodeSDK } = await import("@opentelemetry/sdk-node");
  const sdk = new NodeSDK({ serviceName: env.OTEL_SERVICE_NAME ?? "average-score" });
  sdk.start();
  return () => sdk.shutdown();
}
