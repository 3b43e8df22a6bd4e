// OpenTelemetry metrics and the health snapshot: exact counts for scripted decisions on memory and on a real redis-server that is killed.
import { AggregationTemporality, DataPointType, MeterProvider, MetricReader, type DataPoint, type MetricData } from '@opentelemetry/sdk-metrics';
import { createLimiter, MemoryStore, RedisStore } from '@floodgate/core';
import { createHttpLimiter } from '@floodgate/core/http';
import { startRedis, waitFor, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';

/** A reader the test collects from on demand. */
class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

function setup() {
  const reader = new TestReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  async function collect(): Promise<MetricData[]> {
    const { resourceMetrics } = await reader.collect();
    return resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
  }
  /** Each data point of this metric as 'k=v,k=v' → value (sum, gauge value, or histogram count). */
  async function points(name: string): Promise<Record<string, number>> {
    const metric = (await collect()).find((m) => m.descriptor.name === name);
    const out: Record<string, number> = {};
    for (const p of (metric?.dataPoints ?? []) as DataPoint<unknown>[]) {
      const label = Object.entries(p.attributes)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k}=${String(v)}`)
        .join(',');
      out[label] = metric!.dataPointType === DataPointType.HISTOGRAM ? (p.value as { count: number }).count : (p.value as number);
    }
    return out;
  }
  return { meterProvider, collect, points };
}

const quiet = { warn: () => {}, error: () => {} };

describe('decisions on a memory store', () => {
  it('counts each outcome and reason exactly, by scope and policy', async () => {
    const { meterProvider, points } = setup();
    const limiter = createLimiter({ store: new MemoryStore(), limit: 3, windowMs: '1m', meterProvider, logger: quiet });
    for (let i = 0; i < 5; i++) await limiter.consume('alice', { scope: 'GET /a' }); // 3 allowed, 1 limited, 1 blocked
    for (let i = 0; i < 2; i++) await limiter.consume('bob', { scope: 'GET /b' }); // 2 allowed
    await limiter.peek('carol', { scope: 'GET /b' }); // a peek is not a decision
    expect(limiter.blocked('alice', { scope: 'GET /a' })?.reason).toBe('blocked'); // served from the cache: counted
    expect(await points('floodgate.decisions')).toEqual({
      'floodgate.outcome=allowed,floodgate.policy=default,floodgate.reason=allowed,floodgate.scope=GET /a,floodgate.store=memory': 3,
      'floodgate.outcome=denied,floodgate.policy=default,floodgate.reason=limited,floodgate.scope=GET /a,floodgate.store=memory': 1,
      'floodgate.outcome=denied,floodgate.policy=default,floodgate.reason=blocked,floodgate.scope=GET /a,floodgate.store=memory': 2,
      'floodgate.outcome=allowed,floodgate.policy=default,floodgate.reason=allowed,floodgate.scope=GET /b,floodgate.store=memory': 2,
    });
    expect(await points('floodgate.block_cache.hits')).toEqual({ 'floodgate.store=memory': 2 });
    expect(await points('floodgate.breaker.state')).toEqual({
      'floodgate.breaker.state=closed,floodgate.store=memory': 1,
      'floodgate.breaker.state=half-open,floodgate.store=memory': 0,
      'floodgate.breaker.state=open,floodgate.store=memory': 0,
    });
    // 3 + 1 + 2 + 1 store calls (consumes and the peek); blocked requests make none.
    expect(await points('floodgate.store.duration')).toEqual({ 'floodgate.store=memory': 7 });
    const health = limiter.health();
    expect(health).toMatchObject({ healthy: true, decisions: { allowed: 5, denied: 3, degraded: 0 }, blockCacheHits: 2 });
    expect(health.stores).toEqual([expect.objectContaining({ store: 'memory', breaker: 'closed', calls: 7, lastError: null })]);
  });

  it('keeps attributes bounded and free of keys and IPs when 10,000 distinct callers arrive', async () => {
    const { meterProvider, collect } = setup();
    const http = createHttpLimiter({ store: new MemoryStore(), limit: 1, meterProvider, logger: quiet, apiKeyHeaders: ['x-api-key'], resolveKey: () => null });
    const callers: string[] = [];
    for (let i = 0; i < 10_000; i++) {
      const ip = `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      callers.push(ip);
      await http.handle({ ip, headers: {}, method: 'GET', route: '/items/:id' }, {});
      await http.handle({ ip, headers: {}, method: 'GET', route: '/items/:id' }, {});
    }
    const text = JSON.stringify((await collect()).map((m) => m.dataPoints.map((p) => p.attributes)));
    const series = (await collect()).reduce((n, m) => n + m.dataPoints.length, 0);
    expect(series).toBeLessThan(30);
    for (const ip of callers.slice(0, 50)) expect(text).not.toContain(ip);
    expect(text).not.toContain('ip:');
    const decisions = (await collect()).find((m) => m.descriptor.name === 'floodgate.decisions')!;
    expect(decisions.dataPoints.map((p) => [p.attributes['floodgate.reason'], p.value]).sort()).toEqual([
      ['allowed', 10_000],
      ['limited', 10_000],
    ]);
    expect(http.health().decisions).toEqual({ allowed: 10_000, denied: 10_000, degraded: 0 });
  });

  it('counts scopes past MAX_SCOPES (1000) as one <other> series, and never fails a decision for it', async () => {
    const { meterProvider, points } = setup();
    const limiter = createLimiter({ store: new MemoryStore(), limit: 5, meterProvider, logger: quiet });
    for (let i = 0; i < 1_500; i++) expect((await limiter.consume('s', { scope: `scope-${i}` })).allowed).toBe(true);
    const series = await points('floodgate.decisions');
    expect(Object.keys(series)).toHaveLength(1_001);
    const other = Object.entries(series).find(([label]) => label.includes('floodgate.scope=<other>'));
    expect(other?.[1]).toBe(500);
  });
});

describe('decisions on a real redis-server that is killed', () => {
  let server: RedisServer;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = server.client({ autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 1, retryStrategy: () => 50 });
    client.on('error', () => {});
  });
  afterAll(async () => {
    client.disconnect();
    await server.stop();
  });

  it('counts allowed and limited, then fail-open, store errors and the breaker opening; health says why', async () => {
    const { meterProvider, points } = setup();
    // A deadline no busy machine misses (the default 100 ms is not what this checks: a late third
    // answer read as fail-open, not limited, in a CI run); once the server is killed, ioredis fails
    // each call after its one retry, not at a deadline.
    const store = new RedisStore({ client, coalesce: false, timeoutMs: 30_000 });
    const limiter = createLimiter({ store, prefix: 'otel18', limit: 2, blockCacheSize: 0, meterProvider, logger: quiet, failMode: 'open', breaker: { failureThreshold: 2, coolDownMs: 60_000 } });
    for (let i = 0; i < 3; i++) await limiter.consume('k1', { scope: 'r' });
    expect(await points('floodgate.store.script_calls')).toEqual({ 'floodgate.store=redis': 3 });
    await server.kill();
    await waitFor('client sees the server gone', () => client.status !== 'ready');
    for (let i = 0; i < 5; i++) expect((await limiter.consume('k1', { scope: 'r' })).reason).toBe('fail-open');
    const base = 'floodgate.scope=r,floodgate.store=redis';
    expect(await points('floodgate.decisions')).toEqual({
      [`floodgate.outcome=allowed,floodgate.policy=default,floodgate.reason=allowed,${base}`]: 2,
      [`floodgate.outcome=denied,floodgate.policy=default,floodgate.reason=limited,${base}`]: 1,
      [`floodgate.outcome=degraded,floodgate.reason=fail-open,${base}`]: 5,
    });
    // Two failures open the breaker; the other three are skipped without a store call.
    expect(await points('floodgate.store.errors')).toEqual({ 'error.type=connection,floodgate.store=redis': 2 });
    expect(await points('floodgate.breaker.transitions')).toEqual({ 'floodgate.breaker.state=open,floodgate.store=redis': 1 });
    expect(await points('floodgate.breaker.state')).toMatchObject({ 'floodgate.breaker.state=open,floodgate.store=redis': 1, 'floodgate.breaker.state=closed,floodgate.store=redis': 0 });
    const health = limiter.health();
    expect(health.healthy).toBe(false);
    expect(health.stores[0]).toMatchObject({ store: 'redis', breaker: 'open', consecutiveFailures: 2, calls: 5, errors: { connection: 2, timeout: 0 }, lastError: { kind: 'connection' } });
    expect(health.decisions).toEqual({ allowed: 2, denied: 1, degraded: 5 });
    await server.restart();
  });
});
