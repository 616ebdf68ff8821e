import { register } from "node:module";
import { DiagLogLevel, diag, trace } from "@opentelemetry/api";
import { enableUseCaseSpans } from "../app/use-case-span.js";
import type { TracingConfig } from "../config.js";

/**
 * OpenTelemetry's SDK for this process, started only when tracing is on
 * (config.ts `tracingConfig`): with tracing off nothing of the SDK is even
 * loaded, and the API the code calls is OpenTelemetry's no-op.
 *
 * Started by src/instrument.ts, which `node --import` runs before the
 * service's modules load: the mysql2 instrumentation patches mysql2 as it is
 * loaded, so it must be in place first. The exporter, its endpoint, protocol
 * (http/protobuf, http/json, grpc), headers and the resource
 * (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) are the SDK's own reading of
 * the standard variables.
 */

let stop: (() => Promise<void>) | undefined;

/** Starts the SDK: module hooks, the mysql2 instrumentation, the sampler. */
export async function startTracing(config: TracingConfig): Promise<void> {
  if (stop !== undefined) return;
  // Node's module hooks for the instrumented package only: mysql2 is CommonJS
  // (its files are patched as they are required), and the hook would otherwise
  // wrap every ES module of the app, a cost on each access to their exports.
  register("@opentelemetry/instrumentation/hook.mjs", import.meta.url, {
    data: { include: ["mysql2"] },
  });
  const [
    { NodeSDK },
    { MySQL2Instrumentation },
    { configuredSampler, ServiceSampler },
    { ConsoleSpanExporter },
  ] = await Promise.all([
    import("@opentelemetry/sdk-node"),
    import("@opentelemetry/instrumentation-mysql2"),
    import("./trace-sampler.js"),
    import("@opentelemetry/sdk-trace"),
  ]);
  oneLinePerSpan(ConsoleSpanExporter.prototype);
  const mysql2 = new MySQL2Instrumentation({
    // Statements are Kysely's, with `?` placeholders; masking also keeps
    // out any literal that might be in one. Bound values never reach a span.
    maskStatement: true,
    maskStatementHook: maskLiterals,
  });
  onlyUnderRecordingSpan(mysql2);
  const sdk = new NodeSDK({
    instrumentations: [mysql2],
    sampler: new ServiceSampler(configuredSampler(config)),
    // Traces only: metrics are Prometheus's (/metrics), logs are stdout's.
    // Left to the SDK, it would also start OTLP metric and log exporters.
    metricReaders: [],
    logRecordProcessors: [],
  });
  // The SDK reports a failed export through OpenTelemetry's diagnostic
  // logger, once per batch: here it becomes one line per change of state.
  diag.setLogger(
    { error: exportFailed, warn: ignore, info: ignore, debug: ignore, verbose: ignore },
    DiagLogLevel.ERROR,
  );
  sdk.start();
  enableUseCaseSpans();
  stop = () => sdk.shutdown();
}

/** What ConsoleSpanExporter has, unexported: the span as it prints it, and the printing. */
interface PrintsSpans {
  _exportInfo(span: unknown): object;
  _sendSpans(spans: unknown[], done?: (result: { code: number }) => void): void;
}

/**
 * OTEL_TRACES_EXPORTER=console writes each span as one JSON line on stdout,
 * beside the log's lines, instead of console.dir's multi-line dump (some
 * twenty lines a span). The SDK builds the exporter itself from the
 * variable, so its class is changed; test/integration/tracing-console.test.ts
 * fails if the SDK's exporter stops going through this.
 */
function oneLinePerSpan(exporter: object): void {
  const self = exporter as PrintsSpans;
  self._sendSpans = function (this: PrintsSpans, spans, done) {
    for (const span of spans) {
      process.stdout.write(`${JSON.stringify(this._exportInfo(span), jsonSafe)}\n`);
    }
    done?.({ code: 0 });
  };
}

/** JSON for what a span holds: bigints as text; no value makes the line fail. */
function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? String(value) : value;
}

/** What the mysql2 instrumentation has, unexported: the wrapper it puts on `query` and `execute`. */
interface PatchesQuery {
  _patchQuery(format: unknown, isPrepared: boolean): (original: Query) => Query;
}
type Query = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Statements run through the instrumentation's wrapper only under a span
 * that records (a sampled call); otherwise straight to mysql2. The
 * instrumentation (0.70) would do a span's work and wrap each statement's
 * callback whether or not its call is sampled, and make root spans of the
 * relay's polls: what `requireParentSpan` does in OpenTelemetry's other
 * database instrumentations, which this one lacks. It reaches an unexported
 * method; test/integration/tracing.test.ts fails if SQL spans go missing.
 */
function onlyUnderRecordingSpan(instrumentation: object): void {
  const self = instrumentation as PatchesQuery;
  const patchQuery = self._patchQuery.bind(self);
  self._patchQuery = (format, isPrepared) => (original) => {
    const patched = patchQuery(format, isPrepared)(original);
    return function (this: unknown, ...args: unknown[]) {
      const traced = trace.getActiveSpan()?.isRecording() === true;
      return (traced ? patched : original).apply(this, args);
    };
  };
}

/** Masked statements by their text: Kysely writes a few shapes, each many times. */
const masked = new Map<string, string>();
const MASKED_KEPT = 1000;

/** Numbers and quoted strings as `?` (the instrumentation's own mask), remembered per statement. */
function maskLiterals(query: string): string {
  let text = masked.get(query);
  if (text === undefined) {
    text = query.replace(/\b\d+\b/g, "?").replace(/(["'])(?:(?=(\\?))\2.)*?\1/g, "?");
    if (masked.size >= MASKED_KEPT) masked.clear();
    masked.set(query, text);
  }
  return text;
}

function ignore(): void {}

/** No failure for this long: exports are taken to work again, and the next failure is said again. */
const FAILING_QUIET_MS = 60_000;

/** Where export failures are said; until the service's logger is given, they are counted. */
let failureLog: { warn(fields: object, msg: string): void } | undefined;
let failingSince: number | undefined;
let lastFailure = 0;
let failures = 0;

/**
 * One warn line when exports start failing (a collector that does not
 * answer fails every batch, every few seconds): the rest are counted, and
 * said with the next line once exports have not failed for FAILING_QUIET_MS.
 */
function exportFailed(message: string): void {
  const now = performance.now();
  if (failingSince !== undefined && now - lastFailure >= FAILING_QUIET_MS) failingSince = undefined;
  lastFailure = now;
  failures++;
  if (failingSince !== undefined || failureLog === undefined) return;
  failingSince = now;
  failureLog.warn(
    { reason: message.split("\n", 1)[0], failures },
    "trace export failing: spans are dropped until the collector answers",
  );
  failures = 0;
}

/** Says trace export failures in `logger` (ops/tracing.ts counts them until then). */
export function reportTraceExportFailures(logger: {
  warn(fields: object, msg: string): void;
}): void {
  failureLog = logger;
}

/** Whether `startTracing` has run in this process. */
export function tracingStarted(): boolean {
  return stop !== undefined;
}

/**
 * Exports what is still buffered and stops the SDK (at shutdown), for
 * `withinMs` at most: a collector that does not answer would hold the stop
 * for the exporter's own timeout (10 s by default) and more. Nothing when off.
 */
export async function stopTracing(withinMs: number): Promise<void> {
  const done = stop;
  stop = undefined;
  if (done === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    done().catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, Math.max(0, withinMs));
    }),
  ]);
  clearTimeout(timer);
}
