// The load generator: autocannon's programmatic API, in the bench's own process (servers are children).
import autocannon from 'autocannon';

export interface LoadResult {
  rps: number;
  total: number;
  durationS: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  ok: number;
  limited: number;
  /** Connection errors and timeouts. */
  errors: number;
}

export interface LoadOptions {
  url: string;
  connections: number;
  /** Seconds (fractions allowed). Either this or `amount`. */
  durationS?: number;
  /** Total requests. */
  amount?: number;
  headers?: Record<string, string>;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    pipelining: 1,
    ...(options.amount !== undefined ? { amount: options.amount } : { duration: options.durationS ?? 1 }),
    headers: options.headers,
    timeout: 10,
    // autocannon checks its stop flag once per sample: sample often so a run lasts what was asked.
    sampleInt: 100,
  } as autocannon.Options);
  const codes = (result as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {};
  let total = 0;
  for (const { count } of Object.values(codes)) total += count;
  const durationS = result.duration > 0 ? result.duration : (options.durationS ?? 1);
  return {
    rps: total / durationS,
    total,
    durationS,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    ok: result['2xx'],
    limited: codes['429']?.count ?? 0,
    errors: result.errors + result.timeouts,
  };
}
