// What a client of a Hono app sees on a real Redis: 200, 200, then 429 with RateLimit headers, Retry-After and the problem+json body.
import { getConnInfo } from '@hono/node-server/conninfo';
import { MemoryStore, QUOTA_EXCEEDED_TYPE, RedisStore } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import { Hono } from 'hono';
import type { Redis } from 'ioredis';
import { rateLimit } from '../src';
import { serve } from './serve';

let redis: RedisServer;
let client: Redis;
beforeAll(async () => {
  redis = await startRedis();
  client = redis.client({ autoResendUnfulfilledCommands: false });
  await client.ping();
});
afterAll(async () => {
  client.disconnect();
  await redis.stop();
});

// A loaded 2-core machine can take longer than the default store deadline on a cold first call: these tests are about answers, not deadlines.
const prefix = () => `hono${Math.random().toString(36).slice(2, 10)}`;

it('answers 200, 200, 429 on a route limit of 2, with RateLimit headers, Retry-After and problem+json', async () => {
  const app = new Hono();
  const limiter = rateLimit({ store: new RedisStore({ client, timeoutMs: 2_000 }), prefix: prefix(), getConnInfo, limit: 100, windowMs: '1m' });
  app.use(limiter);
  app.post('/login', limiter.route({ limit: 2, failMode: 'closed' }), (c) => c.json({ ok: true, remaining: c.get('rateLimit')?.remaining }));
  const send = await serve(app);
  const replies = [];
  for (let i = 0; i < 3; i++) {
    const res = await send('/login', { method: 'POST' });
    replies.push({ status: res.status, headers: Object.fromEntries(res.headers), body: await res.text() });
  }
  for (const r of replies) console.log(`POST /login -> ${r.status}\n${Object.entries(r.headers).filter(([k]) => /^(ratelimit|retry-after|content-type)/.test(k)).map(([k, v]) => `  ${k}: ${v}`).join('\n')}\n  ${r.body}`);
  expect(replies.map((r) => r.status)).toEqual([200, 200, 429]);
  expect(replies.map((r) => r.headers['ratelimit-limit'])).toEqual(['2', '2', '2']);
  expect(replies.map((r) => r.headers['ratelimit-remaining'])).toEqual(['1', '0', '0']);
  expect(JSON.parse(replies[0].body)).toEqual({ ok: true, remaining: 1 });
  expect(replies[0].headers['retry-after']).toBeUndefined();
  const limited = replies[2];
  const reset = Number(limited.headers['ratelimit-reset']);
  expect(reset).toBeGreaterThan(0);
  // The default sliding-window-counter: the previous window still weighs in, so up to two windows.
  expect(reset).toBeLessThanOrEqual(120);
  // Never earlier than the reset, plus up to 1 s of jitter (the default), in whole seconds.
  expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(reset);
  expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(reset + 1);
  expect(limited.headers['content-type']).toBe('application/problem+json');
  expect(JSON.parse(limited.body)).toEqual({
    type: QUOTA_EXCEEDED_TYPE,
    title: 'Quota Exceeded',
    status: 429,
    detail: expect.stringMatching(/^Too many requests: retry in \d+ seconds?\.$/),
    'violated-policies': ['default'],
  });
});

it('keeps headers set before the limiter on its 429, answers HEAD without a body, and lets outer middleware see the 429', async () => {
  const seen: number[] = [];
  const app = new Hono();
  app.use(async (c, next) => {
    c.header('Access-Control-Allow-Origin', '*');
    await next();
    seen.push(c.res.status);
  });
  app.use(rateLimit({ store: new RedisStore({ client, timeoutMs: 2_000 }), prefix: prefix(), getConnInfo, limit: 1 }));
  app.get('/r', (c) => c.text('ok'));
  const send = await serve(app);
  expect((await send('/r', { method: 'HEAD' })).status).toBe(200);
  const limited = await send('/r', { method: 'HEAD' });
  expect(limited.status).toBe(429);
  expect(limited.headers.get('access-control-allow-origin')).toBe('*');
  expect(limited.headers.get('retry-after')).not.toBeNull();
  expect(await limited.text()).toBe('');
  expect(seen).toEqual([200, 429]);
});

it('keeps the headers on a response the handler built itself, and serves a handler body as JSON or as its own Response', async () => {
  const store = new RedisStore({ client, timeoutMs: 2_000 });
  const app = new Hono();
  const limiter = rateLimit({ store, prefix: prefix(), getConnInfo, limit: 1, retryAfterJitterMs: 0 });
  app.get('/raw', limiter, () => new Response('raw', { headers: { 'x-own': 'yes' } }));
  app.get('/json', limiter.route({ handler: (_c, e) => ({ slowDown: true, retryAfterMs: e.decision.retryAfterMs > 0 }) }), (c) => c.text('ok'));
  app.get('/own', limiter.route({ handler: (c) => c.json({ mine: true }, 200, { 'x-mine': '1' }) }), (c) => c.text('ok'));
  const send = await serve(app);
  const raw = await send('/raw');
  expect([raw.status, raw.headers.get('x-own'), raw.headers.get('ratelimit-remaining')]).toEqual([200, 'yes', '0']);
  await send('/json');
  const json = await send('/json');
  expect([json.status, json.headers.get('content-type'), json.headers.get('ratelimit-remaining')]).toEqual([429, 'application/json', '0']);
  expect(await json.json()).toEqual({ slowDown: true, retryAfterMs: true });
  await send('/own');
  const own = await send('/own');
  // The handler's own Response gets the limiter's status and headers over its own.
  expect([own.status, own.headers.get('x-mine'), own.headers.get('ratelimit-remaining')]).toEqual([429, '1', '0']);
  expect(Number(own.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(await own.json()).toEqual({ mine: true });
});

it('on @hono/node-server puts its headers on the Node response, not on Hono\'s: c.text keeps its fast path, and the app\'s own header of the same name wins', async () => {
  const seen: (string | null)[] = [];
  const app = new Hono<{ Bindings: { outgoing: import('node:http').ServerResponse } }>();
  app.use(async (c, next) => {
    await next();
    // What a later c.res.headers holds: Hono built no Headers of Floodgate's for this response.
    seen.push(c.res.headers.get('ratelimit-remaining'));
  });
  app.use(rateLimit({ store: new MemoryStore(), getConnInfo, limit: 3, retryAfterJitterMs: 0 }));
  app.get('/r', (c) => {
    // Set before the handler ran, on the response Node will write.
    seen.push(String(c.env.outgoing.getHeader('ratelimit-remaining')));
    return c.text('ok');
  });
  app.get('/mine', (c) => {
    c.header('RateLimit-Policy', '"mine";q=3');
    c.header('RateLimit-Remaining', 'overridden');
    return c.text('ok');
  });
  const send = await serve(app);
  const r = await send('/r');
  expect([r.status, r.headers.get('ratelimit-remaining'), r.headers.get('ratelimit-limit'), r.headers.get('content-type')]).toEqual([200, '2', '3', 'text/plain; charset=UTF-8']);
  expect(seen).toEqual(['2', null]);
  const mine = await send('/mine');
  expect([mine.headers.get('ratelimit-remaining'), mine.headers.get('ratelimit-policy'), mine.headers.get('ratelimit-limit')]).toEqual(['overridden', '"mine";q=3', '3']);
  // Buckets per route: /r's third request takes its last unit, the fourth is limited.
  await send('/r');
  await send('/r');
  const limited = await send('/r');
  expect([limited.status, limited.headers.get('content-type'), limited.headers.get('ratelimit-remaining'), limited.headers.get('retry-after')]).toEqual([
    429,
    'application/problem+json',
    '0',
    expect.stringMatching(/^\d+$/),
  ]);
  expect(((await limited.json()) as { status: number }).status).toBe(429);
});

it("answers a handler's string body as text and an empty one without a body, over a Content-Type set before the limiter, headers kept", async () => {
  const app = new Hono();
  app.use(async (c, next) => {
    c.header('Content-Type', 'text/html');
    c.header('X-Before', 'yes');
    await next();
  });
  const limiter = rateLimit({ store: new MemoryStore(), getConnInfo, limit: 1, retryAfterJitterMs: 0 });
  app.get('/text', limiter.route({ handler: () => 'slow down' }), (c) => c.text('ok'));
  app.get('/empty', limiter.route({ handler: () => undefined }), (c) => c.text('ok'));
  app.get('/default', limiter, (c) => c.text('ok'));
  const send = await serve(app);
  const seen = async (path: string) => {
    await send(path);
    const r = await send(path);
    return [r.status, r.headers.get('content-type'), r.headers.get('x-before'), r.headers.get('ratelimit-remaining'), r.headers.get('retry-after') !== null, await r.text()];
  };
  expect(await seen('/text')).toEqual([429, 'text/plain; charset=UTF-8', 'yes', '0', true, 'slow down']);
  expect(await seen('/empty')).toEqual([429, 'text/html', 'yes', '0', true, '']);
  const problem = await seen('/default');
  expect(problem.slice(0, 5)).toEqual([429, 'application/problem+json', 'yes', '0', true]);
  expect(JSON.parse(problem[5] as string).type).toBe(QUOTA_EXCEEDED_TYPE);
});

it("counts a request whose client went away before the response as failed (countOnly 'failed')", async () => {
  const app = new Hono();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const limiter = rateLimit({ store: new RedisStore({ client, timeoutMs: 2_000 }), prefix: prefix(), getConnInfo, limit: 5, windowMs: '1h', countOnly: 'failed' });
  app.post('/login', limiter, async (c) => {
    if (c.req.header('x-hold')) {
      started();
      await held;
    }
    return c.json({ ok: true });
  });
  const send = await serve(app);
  // Successes are given back: remaining stays at 4 (the reading request's own unit).
  expect((await send('/login', { method: 'POST' })).headers.get('ratelimit-remaining')).toBe('4');
  const abort = new AbortController();
  const gone = send('/login', { method: 'POST', headers: { 'x-hold': '1' }, signal: abort.signal }).catch(() => 'aborted');
  await running;
  abort.abort();
  expect(await gone).toBe('aborted');
  await new Promise((r) => setTimeout(r, 100)); // the close reaches the server
  release();
  let remaining: string | null = null;
  for (let i = 0; i < 50 && remaining !== '2'; i++) {
    await new Promise((r) => setTimeout(r, 20));
    // Each probe succeeds and is refunded; the aborted one stays charged: 5 - 1 (aborted) - 1 (this probe).
    remaining = (await send('/login', { method: 'POST' })).headers.get('ratelimit-remaining');
  }
  expect(remaining).toBe('3');
});
