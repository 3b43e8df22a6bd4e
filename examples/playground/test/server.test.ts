// The playground server over HTTP: the page, the live Express/Fastify/Koa routes with Floodgate's headers, the in-flight and shedding routes, and the race API.
import { pollUntil, startRedis, type RedisServer } from '@floodgate/testing';
import { parsePort } from '../src/main';
import { startPlayground, type Playground } from '../src/server';

const FRAMEWORKS = ['express', 'fastify', 'koa'] as const;

// Response bodies are checked field by field below, so `any` costs no safety here.
const json = (res: Response): Promise<any> => res.json();

describe('playground server without Redis', () => {
  let pg: Playground;
  beforeAll(async () => {
    pg = await startPlayground({ port: 0, log: () => {} });
  });
  afterAll(() => pg?.close());

  it('binds loopback and serves the page, its bundle and its styles', async () => {
    expect(pg.url).toBe(`http://127.0.0.1:${pg.port}/`);
    const page = await fetch(pg.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain('<script src="/app.js">');
    const script = await fetch(new URL('/app.js', pg.url));
    expect(script.headers.get('content-type')).toMatch(/javascript/);
    expect(await script.text()).toContain('slidingWindowCounter');
    expect((await fetch(new URL('/style.css', pg.url))).headers.get('content-type')).toMatch(/text\/css/);
    expect((await fetch(new URL('/nope', pg.url))).status).toBe(404);
  });

  it.each(FRAMEWORKS)('%s: the live route answers with draft-6 RateLimit headers, then 429 with Retry-After', async (fw) => {
    const url = new URL(`/api/${fw}/hello`, pg.url);
    for (let i = 0; i < 5; i++) {
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect((await json(res)).framework).toBe(fw);
      expect(res.headers.get('ratelimit-limit')).toBe('5');
      expect(res.headers.get('ratelimit-remaining')).toBe(String(4 - i));
      expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
      expect(res.headers.get('retry-after')).toBeNull();
    }
    const denied = await fetch(url);
    expect(denied.status).toBe(429);
    await denied.text();
    expect(denied.headers.get('ratelimit-remaining')).toBe('0');
    expect(Number(denied.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('gives each framework its own bucket', async () => {
    const fresh = await startPlayground({ port: 0, log: () => {} });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await fetch(new URL('/api/express/hello', fresh.url));
        await res.text();
        statuses.push(res.status);
      }
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      for (const fw of ['fastify', 'koa']) {
        const res = await fetch(new URL(`/api/${fw}/hello`, fresh.url));
        await res.text();
        expect(res.status).toBe(200);
        expect(res.headers.get('ratelimit-remaining')).toBe('4');
      }
    } finally {
      await fresh.close();
    }
  });

  it('describes the routes and says how to enable the race', async () => {
    const info = await json(await fetch(new URL('/api/info', pg.url)));
    expect(info.live.map((r: { framework: string }) => r.framework)).toEqual([...FRAMEWORKS]);
    expect(info.liveLimit).toEqual({ algorithm: 'sliding-window-counter', limit: 5, windowMs: 10_000 });
    expect(info.race.enabled).toBe(false);
    expect(info.race.command).toContain('REDIS_URL=');
    const race = await fetch(new URL('/api/race', pg.url), { method: 'POST', body: '{"requests":10,"limit":5}' });
    expect(race.status).toBe(503);
    expect((await json(race)).error).toMatch(/REDIS_URL/);
  });

  it('in-flight route: one caller holds 5 slow requests, the rest get 429 with qu="concurrent-requests"; an aborted one frees its slot', async () => {
    const caller = { 'x-playground-caller': `t-${Math.random().toString(36).slice(2, 8)}` };
    const slow = (signal?: AbortSignal) => fetch(new URL('/api/inflight/slow?ms=3000', pg.url), { headers: caller, signal });
    const state = async () => json(await fetch(new URL(`/api/inflight/state?caller=${caller['x-playground-caller']}`, pg.url)));
    const aborts = Array.from({ length: 5 }, () => new AbortController());
    const held = aborts.map((a) => slow(a.signal).catch(() => 'aborted' as const));
    await pollUntil(async () => ((await state()).inHandler === 5 ? true : undefined), { timeoutMs: 5_000, what: '5 in the handler' });
    const refused = await Promise.all(Array.from({ length: 5 }, () => slow()));
    for (const res of refused) {
      expect(res.status).toBe(429);
      expect(res.headers.get('ratelimit-policy')).toContain('"concurrency";q=5;qu="concurrent-requests"');
      expect((await json(res))['violated-policies']).toEqual(['concurrency']);
    }
    // Another caller has slots of its own.
    const other = await fetch(new URL('/api/inflight/slow?ms=100', pg.url), { headers: { 'x-playground-caller': 'someone-else' } });
    expect(other.status).toBe(200);
    await other.text();
    aborts[0].abort();
    expect(await held[0]).toBe('aborted');
    await pollUntil(async () => ((await state()).inHandler === 4 ? true : undefined), { timeoutMs: 5_000, what: 'the aborted one gone' });
    const next = await fetch(new URL('/api/inflight/slow?ms=100', pg.url), { headers: caller });
    expect(next.status).toBe(200);
    expect(await json(next)).toEqual({ heldMs: 100 });
    for (const a of aborts) a.abort();
    await Promise.all(held);
    await pollUntil(async () => ((await state()).inHandler === 0 ? true : undefined), { timeoutMs: 5_000, what: 'all gone' });
    expect((await state()).maxInHandler).toBe(5);
  });

  it('shedding routes: one per class, the CPU asked for bounded, the shedder state readable', async () => {
    for (const priority of ['background', 'default', 'critical']) {
      const res = await fetch(new URL(`/api/shed/${priority}?work=5000`, pg.url));
      // Served unless this (loaded) machine already overloads the loop; critical is never shed either way.
      if (priority === 'critical') expect(res.status).toBe(200);
      if (res.status === 200) expect(await json(res)).toMatchObject({ priority, work: 50, shedding: { level: expect.any(Number) } });
      else expect(res.status).toBe(503);
    }
    const state = await json(await fetch(new URL('/api/shed/state', pg.url)));
    expect(state).toMatchObject({ level: expect.any(Number), utilization: expect.any(Number), shed: { background: expect.any(Number), default: expect.any(Number) } });
    const info = await json(await fetch(new URL('/api/info', pg.url)));
    expect(info.shedding).toMatchObject({ priorities: ['background', 'default', 'critical'], options: { sampleMs: 200 }, maxWorkMs: 50 });
    expect(info.inflight).toMatchObject({ inFlight: 5, path: '/api/inflight/slow' });
  });

  it('refuses a port already in use', async () => {
    await expect(startPlayground({ port: pg.port, log: () => {} })).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });
});

describe('playground server with a real Redis', () => {
  let redis: RedisServer;
  let pg: Playground;
  beforeAll(async () => {
    redis = await startRedis();
    pg = await startPlayground({ port: 0, redisUrl: redis.url, log: () => {} });
  });
  afterAll(async () => {
    await pg?.close();
    await redis?.stop();
  });

  it('POST /api/race: the naive limiter over-admits, Floodgate admits exactly the limit', async () => {
    const res = await fetch(new URL('/api/race', pg.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ requests: 150, limit: 15 }),
    });
    expect(res.status).toBe(200);
    const result = await json(res);
    expect(result.naive.errors + result.floodgate.errors).toBe(0);
    expect(result.naive.admitted).toBeGreaterThan(15);
    expect(result.floodgate.admitted).toBe(15);
    expect(result.floodgate.denied).toBe(135);
  });

  it('answers bad race input with 400, and the info names the Redis', async () => {
    for (const body of ['{"requests":0,"limit":5}', '{"requests":10}', 'not json']) {
      const res = await fetch(new URL('/api/race', pg.url), { method: 'POST', body });
      expect(res.status).toBe(400);
      expect((await json(res)).error).toBeTruthy();
    }
    const info = await json(await fetch(new URL('/api/info', pg.url)));
    expect(info.race).toMatchObject({ enabled: true, target: `redis://127.0.0.1:${redis.port}` });
  });

  it('answers 503 with the reason when Redis goes away', async () => {
    await redis.kill();
    try {
      const res = await fetch(new URL('/api/race', pg.url), { method: 'POST', body: '{"requests":10,"limit":5}' });
      expect(res.status).toBe(503);
      expect((await json(res)).error).toMatch(/not reachable/);
    } finally {
      await redis.restart();
    }
  });
});

describe('parsePort', () => {
  it('takes --port, --port=, -p, then PORT, then 3000', () => {
    expect(parsePort([], {})).toBe(3000);
    expect(parsePort([], { PORT: '4100' })).toBe(4100);
    expect(parsePort(['--port', '4200'], { PORT: '4100' })).toBe(4200);
    expect(parsePort(['--port=0'], {})).toBe(0);
    expect(parsePort(['-p', '65535'], {})).toBe(65535);
  });
  it('rejects what is not a port', () => {
    for (const bad of ['abc', '-1', '65536', '3.5', '0x10']) {
      expect(() => parsePort(['--port', bad], {})).toThrow(/port must be a whole number/);
    }
    expect(() => parsePort(['--port'], { PORT: '4100' })).toThrow(/got undefined/);
  });
});

