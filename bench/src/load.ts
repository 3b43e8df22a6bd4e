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
  /**
   * Many callers: each request carries `X-Forwarded-For` with the next of this many addresses in
   * turn (198.18.0.0/15, the range set aside for benchmarks), so a server that trusts one proxy hop
   * sees that many clients, each sending 1/callers of the load. Undefined: every request from 127.0.0.1.
   */
  callers?: number;
  /** The first caller's index (default 0): a load that continues another's rotation passes the requests sent before it. */
  callerStart?: number;
}

/** The i-th caller's address in 198.18.0.0/15 (up to 131,072 of them). */
export function callerAddress(i: number): string {
  return `198.${18 + ((i >> 16) & 1)}.${(i >> 8) & 255}.${i & 255}`;
}

/** autocannon's per-request hook: the next caller's address in X-Forwarded-For (the counter is shared by every connection). */
export function everyCaller(callers: number, start = 0): { setupRequest: (request: { headers?: Record<string, string> }) => unknown }[] {
  let next = start;
  return [
    {
      setupRequest(request) {
        request.headers = { ...request.headers, 'x-forwarded-for': callerAddress(next++ % callers) };
        return request;
      },
    },
  ];
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    pipelining: 1,
    ...(options.amount !== undefined ? { amount: options.amount } : { duration: options.durationS ?? 1 }),
    headers: options.headers,
    ...(options.callers ? { requests: everyCaller(options.callers, options.callerStart) } : {}),
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
