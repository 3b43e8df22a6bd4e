// The koa-auth example against a real redis-server: login limited to 5 and failing closed (503) when Redis is killed,
// while the customer-facing routes keep answering 200 (fail open).
import { randomUUID } from 'node:crypto';
import type { Logger } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { DEMO_USER, LOGIN_LIMIT, PUBLIC_LIMIT, createApp } from '../src/app';

const wrong = { username: DEMO_USER.username, password: 'wrong' };

function capturingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, warn: (message) => void lines.push(`warn: ${message}`), error: (message) => void lines.push(`error: ${message}`) };
}

describe('koa-auth example with Redis up', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis();
    redis = server.client({ autoResendUnfulfilledCommands: false });
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  const freshApp = () => createApp({ redis, prefix: `ka-${randomUUID().slice(0, 8)}` }).callback();

  it('limits the customer-facing routes per route pattern, with draft-6 headers', async () => {
    const app = freshApp();
    const first = await request(app).get('/products');
    expect(first.status).toBe(200);
    expect(first.body.products).toHaveLength(2);
    expect(first.headers['ratelimit-limit']).toBe(String(PUBLIC_LIMIT));
    expect(first.headers['ratelimit-remaining']).toBe(String(PUBLIC_LIMIT - 1));
    expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
    const byId = await request(app).get('/products/2');
    expect(byId.body).toEqual({ id: 2 });
    const again = await request(app).get('/products/3');
    expect(again.headers['ratelimit-remaining']).toBe(String(PUBLIC_LIMIT - 2)); // /products/:id is one bucket
  });

  it(`allows ${LOGIN_LIMIT} login attempts a minute, then 429 with Retry-After even for the right password`, async () => {
    const app = freshApp();
    for (let i = 1; i <= LOGIN_LIMIT; i++) {
      const attempt = i === LOGIN_LIMIT ? DEMO_USER : wrong;
      const res = await request(app).post('/login').send(attempt);
      expect(res.status).toBe(i === LOGIN_LIMIT ? 200 : 401);
      // The login route's own limiter decides alone: its limit, not the app-level one.
      expect(res.headers['ratelimit-limit']).toBe(String(LOGIN_LIMIT));
      expect(res.headers['ratelimit-remaining']).toBe(String(LOGIN_LIMIT - i));
    }
    const denied = await request(app).post('/login').send(DEMO_USER);
    expect(denied.status).toBe(429);
    expect(denied.body.token).toBeUndefined();
    expect(denied.headers['content-type']).toMatch(/application\/problem\+json/);
    const retryAfter = Number(denied.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(Math.max(1, Number(denied.headers['ratelimit-reset'])));
    expect(retryAfter).toBeLessThanOrEqual(121);

    // Other routes of the same caller keep their own buckets.
    const products = await request(app).get('/products');
    expect(products.status).toBe(200);
    expect(products.headers['ratelimit-remaining']).toBe(String(PUBLIC_LIMIT - 1));
  });

  it('holds a guesser that sends a fresh invented API key with every attempt to the login limit', async () => {
    const app = freshApp();
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const key = i % 2 ? { 'x-api-key': `invented-${randomUUID()}` } : { authorization: `Bearer ${randomUUID()}` };
      statuses.push((await request(app).post('/login').set(key).send(wrong)).status);
    }
    // Before: each invented key was a fresh bucket, and 20 of 20 guesses reached the password check.
    expect(statuses.filter((s) => s !== 429)).toHaveLength(LOGIN_LIMIT);
    expect(statuses.slice(LOGIN_LIMIT).every((s) => s === 429)).toBe(true);
  });
});

describe('koa-auth example when Redis dies', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis();
    redis = server.client({ autoResendUnfulfilledCommands: false });
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it('answers 503 + Retry-After on /login and keeps serving /products (200, no made-up quota), then recovers', async () => {
    const logger = capturingLogger();
    const app = createApp({ redis, prefix: `ka-${randomUUID().slice(0, 8)}`, logger }).callback();
    const before = await request(app).post('/login').send(wrong);
    expect(before.status).toBe(401);
    expect(before.headers['ratelimit-remaining']).toBe(String(LOGIN_LIMIT - 1));

    await server.kill();

    for (let i = 0; i < 3; i++) {
      const login = await request(app).post('/login').send(DEMO_USER);
      expect(login.status).toBe(503);
      expect(login.body.token).toBeUndefined();
      expect(Number(login.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(login.headers['ratelimit-remaining']).toBeUndefined();

      const products = await request(app).get('/products');
      expect(products.status).toBe(200);
      expect(products.body.products).toHaveLength(2);
      expect(products.headers['ratelimit-limit']).toBeUndefined();
      expect(products.headers['ratelimit-remaining']).toBeUndefined();
    }
    expect(logger.lines.length).toBeGreaterThan(0); // the outage was reported

    // Back up (empty: redis-server runs without persistence here): once the store answers, login is limited again.
    await server.restart();
    const deadline = Date.now() + 20_000;
    let status = 503;
    while (status === 503 && Date.now() < deadline) {
      status = (await request(app).post('/login').send(wrong)).status;
      if (status === 503) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(status).toBe(401);
    const after = await request(app).post('/login').send(wrong);
    expect(after.headers['ratelimit-limit']).toBe(String(LOGIN_LIMIT));
  });
});
