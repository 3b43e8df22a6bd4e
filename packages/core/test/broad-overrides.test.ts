// Broad overrides (issue #45 part 3): a route for every caller, or everything, sent as the script's arguments; this instance at once, the others within overrides.pollMs; ending by themselves.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, RedisStore } from '../src';
import { createHttpLimiter } from '../src/http/http-limiter';
import type { RequestFacts } from '../src/identity';
import { MemoryStore } from '../src/stores/memory-store';

const facts = (ip: string, route: string): RequestFacts => ({ ip, headers: {}, method: 'GET', route });

describe('broad overrides on one instance', () => {
  it('a route for every caller, then everything; a caller\'s own override wins; cleared, back', async () => {
    const http = createHttpLimiter({ store: new MemoryStore(), limit: 5, overrides: true });
    const statuses = async (ip: string, route: string, n: number) => {
      const out: (number | string)[] = [];
      for (let i = 0; i < n; i++) out.push((await http.handle(facts(ip, route), {})).status);
      return out;
    };
    await http.override({ route: 'GET /a' }, 1, { ttlMs: '1h', reason: 'incident' });
    expect(await statuses('203.0.113.1', '/a', 2)).toEqual(['next', 429]);
    expect(await statuses('203.0.113.2', '/a', 2)).toEqual(['next', 429]);
    expect(await statuses('203.0.113.1', '/b', 2)).toEqual(['next', 'next']);
    await http.override({ ip: '203.0.113.3', route: 'GET /a' }, 3, { ttlMs: '1h' });
    expect(await statuses('203.0.113.3', '/a', 4)).toEqual(['next', 'next', 'next', 429]);
    await http.override({ all: true }, 2, { ttlMs: '1h' });
    expect(await statuses('203.0.113.9', '/c', 3)).toEqual(['next', 'next', 429]);
    expect((await http.overrides()).map((o) => o.target).sort()).toEqual(['all', 'ip:203.0.113.3', 'route GET /a']);
    await http.clearOverride({ route: 'GET /a' });
    await http.clearOverride({ all: true });
    expect(await statuses('203.0.113.1', '/a', 3)).toEqual(['next', 'next', 'next']);
    await expect(http.override({ route: 'GET /a' }, 0, { ttlMs: '1h' })).rejects.toThrow(/from 1/);
  });
});

describe('broad overrides across instances on a real Redis', () => {
  let server: RedisServer;
  const clients: Redis[] = [];
  beforeAll(async () => {
    server = await startRedis();
  }, 30_000);
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await server?.stop();
  });

  it('set through one instance: another applies it within its poll (50 ms here), and both return to the configured limit once it ends', async () => {
    const prefix = `bo-${Math.random().toString(36).slice(2, 8)}`;
    const make = () => {
      const client = server.client({ autoResendUnfulfilledCommands: false });
      clients.push(client);
      return createLimiter({ store: new RedisStore({ client, timeoutMs: 5000 }), prefix, limit: 100, overrides: { pollMs: 50 }, blockCacheSize: 0 });
    };
    const a = make();
    const b = make();
    expect((await b.peek('x', { scope: 'GET /r' })).limit).toBe(100);
    // Long enough that a loaded machine cannot let it end before the checks below read it (400 ms
    // did, at load 30 on 2 cores), short enough that the test then waits for its end.
    await a.overrideAll(7, { ttlMs: 3_000, scope: 'GET /r' });
    // This instance at once.
    expect((await a.peek('x', { scope: 'GET /r' })).limit).toBe(7);
    // The other at its next poll: wait for it (bounded), counting the decisions it took.
    let polls = 0;
    while ((await b.peek('x', { scope: 'GET /r' })).limit !== 7 && polls < 1000) {
      polls++;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await b.peek('x', { scope: 'GET /r' })).limit).toBe(7);
    expect((await b.peek('x', { scope: 'GET /other' })).limit).toBe(100);
    // Ends by itself (its `until`, by Redis's clock): both back to 100.
    for (const l of [a, b]) {
      let n = 0;
      while ((await l.peek('x', { scope: 'GET /r' })).limit !== 100 && n++ < 3000) await new Promise((r) => setTimeout(r, 10));
      expect((await l.peek('x', { scope: 'GET /r' })).limit).toBe(100);
    }
  }, 60_000);
});
