/** Latency samples in milliseconds and the summaries the harness reports. */

export function percentile(sorted: Float64Array | number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

export function median(values: number[]): number {
  const s = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Growable buffer of latencies (ms). */
export class Latencies {
  private data = new Float64Array(1 << 16);
  count = 0;

  add(ms: number): void {
    if (this.count === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.count++] = ms;
  }

  summary(): { p50: number; p99: number; max: number } {
    const s = this.data.slice(0, this.count).sort();
    return { p50: percentile(s, 50), p99: percentile(s, 99), max: percentile(s, 100) };
  }
}

/** What one load run measured on the client side. */
export interface LoadResult {
  /** Responses received (successes and errors). */
  requests: number;
  /** Responses that were not the expected status, and transport errors. */
  errors: number;
  /** Status (HTTP code or gRPC code name) → count, for every response. */
  statuses: Record<string, number>;
  durationMs: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
}

export function loadResult(
  lat: Latencies,
  statuses: Record<string, number>,
  errors: number,
  durationMs: number,
): LoadResult {
  const { p50, p99, max } = lat.summary();
  let requests = 0;
  for (const n of Object.values(statuses)) requests += n;
  return {
    requests,
    errors,
    statuses,
    durationMs,
    rps: (requests / durationMs) * 1000,
    p50,
    p99,
    max,
  };
}

export function bump(statuses: Record<string, number>, key: string): void {
  statuses[key] = (statuses[key] ?? 0) + 1;
}
