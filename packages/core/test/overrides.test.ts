// Subject overrides (issue #45): through the HTTP layer, the audit hook and the metrics counter, and on a real Redis: read by every instance at its next decision, expiring by itself, capped by the reader's ceiling.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { AggregationTemporality, MeterProvider, MetricReader, type MetricData } from '@opentelemetry/sdk-metrics';
import { createLimiter, RedisStore, type OverrideEvent } from '../src';
import { createHttpLimiter } from '../src/http/http-limiter';
import type { RequestFacts } from '../src/identity';
import { MemoryStore } from '../src/stores/memory-store';

class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

const facts = (ip: string, route = '/a'): RequestFacts => ({ ip, headers: {}, method: 'GET', route });

describe('overrides through the HTTP layer (every adapter: HttpLimiter.override)', () => {
  it('an IP on one route: the next request has the override, other routes and callers keep theirs; cleared, back', async () => {
    const http = createHttpLimiter({ store: new MemoryStore(), limit: 5, overrides: true });
    await http.override({ ip: '::ffff:203.0.113.9', route: 'GET /a' }, 1, { ttlMs: '1h', reason: 'abuse' });
    const statuses = async (ip: string, route: string, n: number) => {
      const out: (number | string)[] = [];
      for (let i = 0; i < n; i++) out.push((await http.handle(facts(ip, route), {})).status);
      return out;
    };
    // IPv4-mapped IPv6 is keyed as IPv4: the override names the same subject as the requests.
    expect(await statuses('203.0.113.9', '/a', 2)).toEqual(['next', 429]);
    expect(await statuses('203.0.113.9', '/b', 2)).toEqual(['next', 'next']);
    expect(await statuses('203.0.113.10', '/a', 2)).toEqual(['next', 'next']);
    expect(await http.overrides()).toMatchObject([{ target: 'ip:203.0.113.9', scope: 'GET /a', limits: { default: 1 }, reason: 'abuse' }]);
    await http.clearOverride({ ip: '203.0.113.9', route: 'GET /a' });
    expect(await statuses('203.0.113.9', '/a', 1)).toEqual(['next']);
  });

  it('a custom key target, and bad targets refused with a clear error', async () => {
    const http = createHttpLimiter<{ user: string }>({ store: new MemoryStore(), limit: 5, overrides: true, key: (req) => req.user });
    await http.override({ key: 'alice', route: 'GET /a' }, 0, { ttlMs: '1h' });
    expect((await http.handle(facts('198.51.100.1'), { user: 'alice' })).status).toBe(429);
    expect((await http.handle(facts('198.51.100.1'), { user: 'bob' })).status).toBe('next');
    await expect(http.override({ ip: '1.2.3.4' }, 1, { ttlMs: '1h' })).rejects.toThrow(/target.route/);
    await expect(http.override({ ip: 'nope', route: 'GET /a' }, 1, { ttlMs: '1h' })).rejects.toThrow(/target.ip/);
    await expect(http.override({ ip: '1.2.3.4', key: 'x', route: 'GET /a' }, 1, { ttlMs: '1h' })).rejects.toThrow(/exactly one/);
  });

  it('reports each set and clear to the onOverride hook and counts them in floodgate.overrides; a throwing hook breaks nothing', async () => {
    const reader = new TestReader();
    const meterProvider = new MeterProvider({ readers: [reader] });
    const events: OverrideEvent[] = [];
    const errors: string[] = [];
    const limiter = createLimiter({
      store: new MemoryStore(),
      limit: 5,
      overrides: true,
      meterProvider,
      logger: { warn: () => undefined, error: (m) => void errors.push(m) },
      onOverride: (e) => {
        events.push(e);
        if (e.action === 'clear') throw new Error('audit sink down');
      },
    });
    await limiter.override('s', 2, { ttlMs: '1h', reason: 'sale', label: 'account 42' });
    await limiter.clearOverride('s', { label: 'account 42' });
    expect(events.map((e) => [e.action, e.target, e.record?.reason])).toEqual([
      ['set', 'account 42', 'sale'],
      ['clear', 'account 42', undefined],
    ]);
    expect(errors).toHaveLength(1);
    const { resourceMetrics } = await reader.collect();
    const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m: MetricData) => m.descriptor.name === 'floodgate.overrides');
    const byAction = Object.fromEntries((metric?.dataPoints ?? []).map((p) => [p.attributes['floodgate.override.action'], p.value]));
    expect(byAction).toEqual({ set: 1, clear: 1 });
  });
});

describe('overrides on a real Redis', () => {
  let server: RedisServer;
  const clients: Redis[] = [];
  beforeAll(async () => {
    server = await startRedis();
  }, 30_000);
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await server?.stop();
  });
  const client = () => {
    const c = server.client({ autoResendUnfulfilledCommands: false });
    clients.push(c);
    return c;
  };
  const prefix = () => `ov-${Math.random().toString(36).slice(2, 8)}`;

  it('set through one instance, the next decision of each of 4 instances (own clients) applies it; no block cache stands in the way of a lower limit', async () => {
    const p = prefix();
    const instances = [0, 1, 2, 3].map(() => createLimiter({ store: new RedisStore({ client: client(), timeoutMs: 5000 }), prefix: p, limit: 100, overrides: true }));
    for (const l of instances) expect((await l.consume('hot')).allowed).toBe(true);
    await instances[0].override('hot', 5, { ttlMs: '1h' });
    // 4 used, limit now 5: one more anywhere, then every instance refuses.
    expect((await instances[3].consume('hot')).allowed).toBe(true);
    for (const l of instances) expect(await l.consume('hot')).toMatchObject({ allowed: false, limit: 5 });
  });

  it('expires by itself: the key carries its ttl (PEXPIRE by Redis), and once it has passed every instance has the configured limit', async () => {
    const p = prefix();
    const c = client();
    const a = createLimiter({ store: new RedisStore({ client: c, timeoutMs: 5000 }), prefix: p, limit: 3, overrides: true, blockCacheSize: 0 });
    await a.override('s', 0, { ttlMs: 300 });
    const keys = await c.keys(`${p}:*:ovr`);
    expect(keys).toHaveLength(1);
    const ttl = await c.pttl(keys[0]);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(300);
    // Wait on Redis itself: the key gone (its own expiry), never a sleep of our choosing.
    while ((await c.exists(keys[0])) === 1) await new Promise((r) => setTimeout(r, 20));
    expect(await a.consume('s')).toMatchObject({ allowed: true, limit: 3 });
    expect(await a.overrides()).toEqual([]);
  });

  it('a reader with a lower limitCeiling caps an override another wrote, in the script', async () => {
    const p = prefix();
    const writer = createLimiter({ store: new RedisStore({ client: client(), timeoutMs: 5000 }), prefix: p, limit: 3, overrides: true });
    const reader = createLimiter({ store: new RedisStore({ client: client(), timeoutMs: 5000 }), prefix: p, limit: 3, overrides: true, limitCeiling: 4 });
    await writer.override('s', 50, { ttlMs: '1h' });
    let admitted = 0;
    for (let i = 0; i < 10; i++) if ((await reader.consume('s')).allowed) admitted++;
    expect(admitted).toBe(4);
  });
});
