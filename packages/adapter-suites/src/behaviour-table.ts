// The behaviour table every adapter runs: one set of HTTP scenarios with exact header values, on each mounting, on memory and Redis.
import { MemoryStore, QUOTA_EXCEEDED_TYPE, RedisStore, type HttpRateLimitOptions, type RateLimitEvent, type Store } from '@floodgate/core';
import type { Redis } from 'ioredis';
import { parseList } from 'structured-headers';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { AdapterHarness, Mounting, RouteSpec, RunningApp } from './harness';

export interface Reply {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: string;
}

interface TestApp {
  request(method: 'GET' | 'POST' | 'HEAD', url: string, headers?: Record<string, string>): Promise<Reply>;
  close(): Promise<void>;
}

/** Requests to a running app, one client for every adapter. */
function overHttp(app: RunningApp): TestApp {
  return {
    async request(method, url, headers = {}) {
      const res = await fetch(`http://127.0.0.1:${app.port}${url}`, { method, headers });
      return { status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() };
    },
    close: () => app.close(),
  };
}

/** An independent RFC 9651 List parser, to read the draft-10 headers with. */
const parseStructuredList = (value: string) => parseList(value) as unknown as [unknown, Map<string, unknown>][];

/** 15 s into a 60 s window: a fixed window resets in exactly 45 s. */
const T0 = 28_333_333 * 60_000 + 15_000;
const silent = { warn: () => undefined, error: () => undefined };

const json = (reply: Reply): any => JSON.parse(reply.body);

/**
 * The stores every adapter runs the table on: memory, and a real redis-server started for the test
 * file (in beforeAll, stopped in afterAll). Both follow the table's fake clock.
 */
function behaviourStores(): Record<'memory' | 'redis', (clock: () => number) => Store> {
  let redis: RedisServer | undefined;
  let client: Redis | undefined;
  beforeAll(async () => {
    redis = await startRedis();
    client = redis.client();
  });
  afterAll(async () => {
    client?.disconnect();
    await redis?.stop();
  });
  return {
    memory: (clock) => new MemoryStore({ clock }),
    redis: (clock) => new RedisStore({ client: client!, timeoutMs: 2_000, UNSAFE_testClock: clock }),
  };
}

/** Runs the table on every mounting `h` offers, each on memory and on a real Redis. */
export function runBehaviourTable(h: AdapterHarness): void {
  describe(`behaviour table: ${h.name}`, () => {
    const stores = behaviourStores();
    for (const mounting of h.mountings) {
      for (const [storeName, store] of Object.entries(stores)) scenarios(h, mounting, storeName, store);
    }
  });
}

/** Every scenario against one adapter, framework version, mounting and store. */
function scenarios(h: AdapterHarness, mounting: Mounting, storeName: string, store: (clock: () => number) => Store): void {
  describe(`${mounting} on ${storeName}`, () => {
    let now = T0;
    const clock = () => now;
    const apps: TestApp[] = [];
    beforeEach(() => {
      now = T0;
    });
    afterEach(async () => {
      await Promise.all(apps.splice(0).map((a) => a.close()));
    });

    /** An app whose limiter reads the scenario clock; fixed-window, 3 per minute, no jitter unless set. */
    async function app(options: HttpRateLimitOptions<any>, routes: RouteSpec[]): Promise<TestApp> {
      const started = await h.start({
        mounting,
        options: {
          store: store(clock),
          clock,
          algorithm: 'fixed-window',
          limit: 3,
          windowMs: 60_000,
          retryAfterJitterMs: 0,
          logger: silent,
          // A fresh key space per app: scenarios share one Redis and the same routes and callers.
          prefix: `t${Math.random().toString(36).slice(2, 12)}`,
          ...options,
        },
        routes,
      });
      const built = overHttp(started);
      apps.push(built);
      return built;
    }

    it('sends exact draft-6 headers and puts the decision on the request', async () => {
      const a = await app({}, [{ method: 'GET', path: '/a' }]);
      for (const remaining of [2, 1, 0]) {
        const r = await a.request('GET', '/a');
        expect(r.status).toBe(200);
        expect(r.headers['ratelimit-limit']).toBe('3');
        expect(r.headers['ratelimit-remaining']).toBe(String(remaining));
        expect(r.headers['ratelimit-reset']).toBe('45');
        expect(r.headers['retry-after']).toBeUndefined();
        expect(json(r)).toEqual({ route: '/a', remaining, reason: 'allowed' });
      }
    });

    it('answers 429 with Retry-After and problem+json at the limit, and admits again after the reset', async () => {
      const a = await app({}, [{ method: 'GET', path: '/a' }]);
      for (let i = 0; i < 3; i++) expect((await a.request('GET', '/a')).status).toBe(200);
      for (let i = 0; i < 2; i++) {
        const r = await a.request('GET', '/a'); // the second one is answered from the block cache
        expect(r.status).toBe(429);
        expect(r.headers['retry-after']).toBe('45');
        expect(r.headers['ratelimit-limit']).toBe('3');
        expect(r.headers['ratelimit-remaining']).toBe('0');
        expect(r.headers['ratelimit-reset']).toBe('45');
        expect(r.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(json(r)).toEqual({
          type: QUOTA_EXCEEDED_TYPE,
          title: 'Quota Exceeded',
          status: 429,
          detail: 'Too many requests: retry in 45 seconds.',
          'violated-policies': ['default'],
        });
      }
      now += 45_000;
      const after = await a.request('GET', '/a');
      expect(after.status).toBe(200);
      expect(after.headers['ratelimit-remaining']).toBe('2');
      expect(after.headers['ratelimit-reset']).toBe('60');
    });

    it('draws a route cost of 10 from the budget, and a cost function gets the request', async () => {
      const a = await app({ limit: 25 }, [
        { method: 'POST', path: '/reports', options: { cost: 10 } },
        { method: 'GET', path: '/units', options: { cost: (req: { headers: Record<string, string> }) => Number(req.headers['x-units']) } },
        { method: 'GET', path: '/a' },
      ]);
      expect((await a.request('POST', '/reports')).headers['ratelimit-remaining']).toBe('15');
      expect((await a.request('POST', '/reports')).headers['ratelimit-remaining']).toBe('5');
      const denied = await a.request('POST', '/reports');
      expect(denied.status).toBe(429);
      expect(denied.headers['ratelimit-remaining']).toBe('5');
      expect(denied.headers['retry-after']).toBe('45');
      expect((await a.request('GET', '/units', { 'x-units': '7' })).headers['ratelimit-remaining']).toBe('18');
      expect((await a.request('GET', '/a')).headers['ratelimit-remaining']).toBe('24');
    });

    it('fails a request whose cost function returns a bad cost with a server error, never a crash', async () => {
      const a = await app({}, [{ method: 'GET', path: '/bad', options: { cost: () => -1 } }, { method: 'GET', path: '/a' }]);
      expect((await a.request('GET', '/bad')).status).toBe(500);
      expect((await a.request('GET', '/a')).status).toBe(200);
    });

    it('keeps separate buckets for separate routes and for methods on one path', async () => {
      const a = await app({}, [
        { method: 'GET', path: '/a' },
        { method: 'GET', path: '/b' },
        { method: 'POST', path: '/a' },
      ]);
      for (let i = 0; i < 3; i++) await a.request('GET', '/a');
      expect((await a.request('GET', '/a')).status).toBe(429);
      const b = await a.request('GET', '/b');
      expect(b.status).toBe(200);
      expect(b.headers['ratelimit-remaining']).toBe('2');
      const post = await a.request('POST', '/a');
      expect(post.status).toBe(200);
      expect(post.headers['ratelimit-remaining']).toBe('2');
    });

    it('keys /users/1 and /users/2 on the one /users/:id bucket, never the raw URL', async () => {
      const a = await app({}, [{ method: 'GET', path: '/users/:id' }]);
      expect((await a.request('GET', '/users/1')).headers['ratelimit-remaining']).toBe('2');
      expect((await a.request('GET', '/users/2')).headers['ratelimit-remaining']).toBe('1');
      expect((await a.request('GET', '/users/3?x=1')).headers['ratelimit-remaining']).toBe('0');
      expect((await a.request('GET', '/users/4')).status).toBe(429);
    });

    it('shares one bucket between the routes of a named group', async () => {
      const a = await app({}, [
        { method: 'GET', path: '/search', options: { group: 'search' } },
        { method: 'GET', path: '/find', options: { group: 'search' } },
        { method: 'GET', path: '/other' },
      ]);
      await a.request('GET', '/search');
      await a.request('GET', '/search');
      expect((await a.request('GET', '/find')).headers['ratelimit-remaining']).toBe('0');
      expect((await a.request('GET', '/find')).status).toBe(429);
      expect((await a.request('GET', '/search')).status).toBe(429);
      expect((await a.request('GET', '/other')).headers['ratelimit-remaining']).toBe('2');
    });

    it('applies a per-route limit over the global options, and exempts a route with false', async () => {
      const a = await app({}, [
        { method: 'GET', path: '/strict', options: { limit: 1 } },
        { method: 'GET', path: '/free', options: false },
        { method: 'GET', path: '/a' },
      ]);
      expect((await a.request('GET', '/strict')).headers['ratelimit-limit']).toBe('1');
      expect((await a.request('GET', '/strict')).status).toBe(429);
      for (let i = 0; i < 5; i++) {
        const r = await a.request('GET', '/free');
        expect(r.status).toBe(200);
        expect(r.headers['ratelimit-limit']).toBeUndefined();
        expect(json(r).reason).toBeNull();
      }
      expect((await a.request('GET', '/a')).headers['ratelimit-limit']).toBe('3');
    });

    it('in shadow mode evaluates, reports through hooks and headers, and never blocks', async () => {
      const limited: RateLimitEvent[] = [];
      const decided: RateLimitEvent[] = [];
      const a = await app(
        { shadow: true, limit: 1, onLimited: (e: RateLimitEvent) => limited.push(e), onDecision: (e: RateLimitEvent) => decided.push(e) },
        [{ method: 'GET', path: '/a' }],
      );
      for (let i = 0; i < 4; i++) {
        const r = await a.request('GET', '/a');
        expect(r.status).toBe(200);
        expect(r.headers['ratelimit-remaining']).toBe('0');
        expect(r.headers['retry-after']).toBeUndefined();
        expect(json(r).reason).toBe(i === 0 ? 'allowed' : i === 1 ? 'limited' : 'blocked');
      }
      expect(decided).toHaveLength(4);
      expect(limited).toHaveLength(3);
      expect(limited.every((e) => e.shadow && !e.decision.allowed && e.scope === 'GET /a' && e.cost === 1)).toBe(true);
    });

    it('sends draft-10 RateLimit-Policy and RateLimit for every limit, readable by an independent parser', async () => {
      const a = await app(
        {
          headers: 'draft-10',
          limit: undefined,
          limits: [
            { name: 'burst', limit: 2, windowMs: 1000 },
            { name: 'sustained', limit: 5, windowMs: 60_000 },
          ],
        },
        [{ method: 'GET', path: '/a' }],
      );
      const r = await a.request('GET', '/a');
      expect(r.headers['ratelimit-limit']).toBeUndefined();
      expect(r.headers['ratelimit-policy']).toBe('"burst";q=2;w=1, "sustained";q=5;w=60');
      expect(r.headers['ratelimit']).toBe('"burst";r=1;t=1;floodgate-t-ms=1000, "sustained";r=4;t=45;floodgate-t-ms=45000');
      const policy = parseStructuredList(r.headers['ratelimit-policy']!);
      expect(policy.map(([name, params]) => [name, Object.fromEntries(params)])).toEqual([
        ['burst', { q: 2, w: 1 }],
        ['sustained', { q: 5, w: 60 }],
      ]);
      const current = parseStructuredList(r.headers['ratelimit']!);
      expect(current.map(([name, params]) => [name, Object.fromEntries(params)])).toEqual([
        // The vendor parameter (docs/headers.md#the-reset-to-the-ms) is read beside r and t, breaking nothing.
        ['burst', { r: 1, t: 1, 'floodgate-t-ms': 1000 }],
        ['sustained', { r: 4, t: 45, 'floodgate-t-ms': 45000 }],
      ]);
    });

    it('with several limits, draft-6 describes the most restrictive and draft-10 lists all; a 429 names the violated one', async () => {
      const a = await app(
        {
          headers: ['draft-6', 'draft-10'],
          limit: undefined,
          limits: [
            { name: 'burst', limit: 2, windowMs: 1000 },
            { name: 'sustained', limit: 5, windowMs: 60_000 },
          ],
        },
        [{ method: 'GET', path: '/a' }],
      );
      const first = await a.request('GET', '/a');
      expect([first.headers['ratelimit-limit'], first.headers['ratelimit-remaining'], first.headers['ratelimit-reset']]).toEqual(['2', '1', '1']);
      await a.request('GET', '/a');
      const denied = await a.request('GET', '/a');
      expect(denied.status).toBe(429);
      expect(denied.headers['retry-after']).toBe('1');
      expect([denied.headers['ratelimit-limit'], denied.headers['ratelimit-remaining'], denied.headers['ratelimit-reset']]).toEqual(['2', '0', '1']);
      expect(denied.headers['ratelimit']).toBe('"burst";r=0;t=1;floodgate-t-ms=1000, "sustained";r=3;t=45;floodgate-t-ms=45000');
      expect(denied.headers['floodgate-reset-ms']).toBe('1000');
      expect(json(denied)['violated-policies']).toEqual(['burst']);
    });

    it("sends X-RateLimit-* for 'legacy', and no quota headers for false (Retry-After stays)", async () => {
      const legacy = await app({ headers: 'legacy' }, [{ method: 'GET', path: '/a' }]);
      const before = Date.now();
      const r = await legacy.request('GET', '/a');
      expect(r.headers['x-ratelimit-limit']).toBe('3');
      expect(r.headers['x-ratelimit-remaining']).toBe('2');
      // A Unix time in seconds: the wall clock at the response plus the 45 s until the reset.
      const reset = Number(r.headers['x-ratelimit-reset']);
      expect(reset).toBeGreaterThanOrEqual(Math.ceil((before + 45_000) / 1000));
      expect(reset).toBeLessThanOrEqual(Math.ceil((Date.now() + 45_000) / 1000));
      expect(r.headers['ratelimit-limit']).toBeUndefined();

      const none = await app({ headers: false, limit: 1 }, [{ method: 'GET', path: '/a' }]);
      const ok = await none.request('GET', '/a');
      expect(Object.keys(ok.headers).filter((k) => k.includes('ratelimit'))).toEqual([]);
      const denied = await none.request('GET', '/a');
      expect(denied.status).toBe(429);
      expect(denied.headers['retry-after']).toBe('45');
      expect(Object.keys(denied.headers).filter((k) => k.includes('ratelimit'))).toEqual([]);
    });

    it('answers a cost function that returns a cost that can never fit with 429, no Retry-After, and a body that says so', async () => {
      const a = await app({}, [{ method: 'POST', path: '/huge', options: { cost: () => 10 } }]);
      const r = await a.request('POST', '/huge');
      expect(r.status).toBe(429);
      expect(r.headers['retry-after']).toBeUndefined();
      const body = json(r);
      expect(body.type).toBe(QUOTA_EXCEEDED_TYPE);
      expect(body.detail).toBe('This request costs 10 units, more than the limit of 3: it can never be admitted, so retrying will not help.');
      expect(body['violated-policies']).toEqual(['default']);
    });

    it('lets a handler replace the 429 body; status and headers stay', async () => {
      const a = await app(
        { limit: 1, handler: (_req: unknown, e: RateLimitEvent) => ({ message: 'slow down', retryAfterMs: e.decision.retryAfterMs }) },
        [{ method: 'GET', path: '/a' }],
      );
      await a.request('GET', '/a');
      const r = await a.request('GET', '/a');
      expect(r.status).toBe(429);
      expect(r.headers['retry-after']).toBe('45');
      expect(r.headers['content-type']).toMatch(/^application\/json/);
      expect(json(r)).toEqual({ message: 'slow down', retryAfterMs: 45_000 });
    });

    it('keys on a custom key function of the request, per caller', async () => {
      const a = await app({ limit: 1, key: (req: { headers: Record<string, string> }) => req.headers['x-user'] }, [{ method: 'GET', path: '/a' }]);
      expect((await a.request('GET', '/a', { 'x-user': 'u1' })).status).toBe(200);
      expect((await a.request('GET', '/a', { 'x-user': 'u1' })).status).toBe(429);
      expect((await a.request('GET', '/a', { 'x-user': 'u2' })).status).toBe(200);
    });

    it('spreads Retry-After over the jitter range, never earlier than the reset', async () => {
      const a = await app({ limit: 1, retryAfterJitterMs: 5000 }, [{ method: 'GET', path: '/a' }]);
      await a.request('GET', '/a');
      const seen: number[] = [];
      for (let i = 0; i < 60; i++) {
        const r = await a.request('GET', '/a');
        expect(r.status).toBe(429);
        const retry = Number(r.headers['retry-after']);
        expect(retry).toBeGreaterThanOrEqual(Number(r.headers['ratelimit-reset'])); // 45
        expect(retry).toBeGreaterThanOrEqual(45);
        expect(retry).toBeLessThanOrEqual(50);
        seen.push(retry);
      }
      expect(new Set(seen).size).toBeGreaterThanOrEqual(4);
    });

    it('maps store failures: closed -> 503 with Retry-After, open -> served; neither sends quota headers', async () => {
      const broken: Store = { name: 'broken', evaluate: () => Promise.reject(new Error('down')), reset: async () => undefined };
      const a = await app({ store: broken, timeoutMs: 50 }, [
        { method: 'POST', path: '/login', options: { failMode: 'closed' } },
        { method: 'GET', path: '/feed', options: { failMode: 'open' } },
      ]);
      const closed = await a.request('POST', '/login');
      expect(closed.status).toBe(503);
      expect(Number(closed.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(closed.headers['ratelimit-limit']).toBeUndefined();
      expect(json(closed).status).toBe(503);
      const open = await a.request('GET', '/feed');
      expect(open.status).toBe(200);
      expect(open.headers['ratelimit-limit']).toBeUndefined();
      expect(json(open).reason).toBe('fail-open');
    });

    // Only where the mounting sees unmatched requests (app-wide); per-route middleware never does.
    if (mounting === 'app-level') it('limits requests that match no route in one bucket, not one per URL', async () => {
      const a = await app({}, [{ method: 'GET', path: '/a' }]);
      for (let i = 1; i <= 3; i++) {
        const r = await a.request('GET', `/nope/${i}`);
        expect(r.status).toBe(404);
        expect(r.headers['ratelimit-remaining']).toBe(String(3 - i));
      }
      expect((await a.request('GET', '/nope/4')).status).toBe(429);
      expect((await a.request('GET', '/a')).headers['ratelimit-remaining']).toBe('2');
    });

    it('counts HEAD on the GET bucket', async () => {
      const a = await app({}, [{ method: 'GET', path: '/a' }]);
      await a.request('HEAD', '/a');
      expect((await a.request('GET', '/a')).headers['ratelimit-remaining']).toBe('1');
    });
  });
}
