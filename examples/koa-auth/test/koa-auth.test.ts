// The koa-auth example against a real redis-server: login limited to 5 and failing closed (503) when Redis is killed,
// while the customer-facing routes keep answering 200 (fail open).
import { randomUUID } from 'node:crypto';
import type { Logger } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { DEMO_USER, FAILURES_PER_ACCOUNT, FAILURES_PER_IP, PUBLIC_LIMIT, createApp, type AppOptions } from '../src/app';

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
  const freshApp = (extra: Partial<AppOptions> = {}) => createApp({ redis, redisTimeoutMs: 30_000, prefix: `ka-${randomUUID().slice(0, 8)}`, ...extra }).callback();

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

  it('answers 400 to a username sent as an array, an object, null or a boolean: never a guess outside the account limit (issue 40, row 8)', async () => {
    const app = freshApp({ trustProxy: true });
    const bodies = [{ username: ['demo'] }, { username: [['demo']] }, { username: { $ne: null } }, { username: null }, { username: true }];
    const statuses: number[] = [];
    for (const [i, body] of bodies.entries()) statuses.push((await request(app).post('/login').set('x-forwarded-for', `198.51.100.${i + 1}`).send({ ...body, password: 'wrong' })).status);
    expect(statuses).toEqual(bodies.map(() => 400));
    // The account's own budget is untouched by them: the owner still has every attempt.
    const owner: number[] = [];
    for (let i = 0; i < FAILURES_PER_ACCOUNT; i++) owner.push((await request(app).post('/login').set('x-forwarded-for', `198.51.100.${50 + i}`).send(wrong)).status);
    expect(owner).toEqual(Array(FAILURES_PER_ACCOUNT).fill(401));
  });

  it('lets 20 successful logins in a row from one IP through: only failures count', async () => {
    const app = freshApp();
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await request(app).post('/login').send(DEMO_USER)).status);
    expect(statuses).toEqual(Array(20).fill(200));
  });

  it(`refuses the ${FAILURES_PER_ACCOUNT + 1}th failed guess for one account even when every guess comes from another IP`, async () => {
    const app = freshApp({ trustProxy: true });
    const statuses: number[] = [];
    for (let i = 0; i < FAILURES_PER_ACCOUNT + 2; i++) {
      statuses.push((await request(app).post('/login').set('x-forwarded-for', `198.51.100.${i + 1}`).send(wrong)).status);
    }
    expect(statuses).toEqual([...Array(FAILURES_PER_ACCOUNT).fill(401), 429, 429]);
    // Even the right password waits: the account is locked, whoever asks.
    expect((await request(app).post('/login').set('x-forwarded-for', '198.51.100.99').send(DEMO_USER)).status).toBe(429);
    // Failures on one account do not lock another, nor the IPs that guessed.
    expect((await request(app).post('/login').set('x-forwarded-for', '198.51.100.1').send({ username: 'alice', password: 'open sesame' })).status).toBe(200);
  });

  it('clears an account\'s failures when its owner logs in', async () => {
    const app = freshApp();
    for (let i = 0; i < FAILURES_PER_ACCOUNT - 1; i++) expect((await request(app).post('/login').send(wrong)).status).toBe(401);
    expect((await request(app).post('/login').send(DEMO_USER)).status).toBe(200);
    const after: number[] = [];
    for (let i = 0; i < FAILURES_PER_ACCOUNT; i++) after.push((await request(app).post('/login').send(wrong)).status);
    expect(after).toEqual(Array(FAILURES_PER_ACCOUNT).fill(401));
  });

  it('locks a caller refused again and again out for longer each time', async () => {
    // A 1 s account window, so that the lock (2 s, then 4, then 8) is what the caller waits for.
    const app = freshApp({ lockout: { after: 1, baseMs: 2_000, maxMs: 16_000 }, accountWindowMs: 1_000 });
    const waits: number[] = [];
    for (let round = 0; round < 3; round++) {
      // Guess until refused (a window may have let a few more through since the last lock).
      let refused: request.Response | undefined;
      for (let i = 0; i < 20 && !refused; i++) {
        const res = await request(app).post('/login').send(wrong);
        if (res.status === 429) refused = res;
        else expect(res.status).toBe(401);
      }
      expect(refused).toBeDefined();
      const retryAfter = Number(refused!.headers['retry-after']);
      waits.push(retryAfter);
      if (round < 2) await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000 + 100));
    }
    console.log(`koa-auth lock-out: Retry-After ${waits.join(', ')} s for three refusals in a row, each after the last lock ended (base 2 s, doubling, + up to 1 s jitter)`);
    expect(waits[1]).toBeGreaterThan(waits[0]);
    expect(waits[2]).toBeGreaterThan(waits[1]);
    expect(waits[0]).toBeGreaterThanOrEqual(2);
  }, 40_000);

  it('never refuses an allowlisted address', async () => {
    const app = freshApp({ allowList: ['127.0.0.0/8', '::1/128'] });
    const statuses: number[] = [];
    for (let i = 0; i < FAILURES_PER_ACCOUNT * 3; i++) statuses.push((await request(app).post('/login').send(wrong)).status);
    expect(statuses).toEqual(Array(FAILURES_PER_ACCOUNT * 3).fill(401));
  });

  it('holds a guesser that sends a fresh invented API key with every attempt to the login limit', async () => {
    const app = freshApp();
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const key = i % 2 ? { 'x-api-key': `invented-${randomUUID()}` } : { authorization: `Bearer ${randomUUID()}` };
      statuses.push((await request(app).post('/login').set(key).send(wrong)).status);
    }
    // Before: each invented key was a fresh bucket, and 20 of 20 guesses reached the password check.
    expect(statuses.filter((s) => s !== 429)).toHaveLength(FAILURES_PER_ACCOUNT);
    expect(statuses.slice(FAILURES_PER_ACCOUNT).every((s) => s === 429)).toBe(true);
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
    const app = createApp({ redis, redisTimeoutMs: 30_000, prefix: `ka-${randomUUID().slice(0, 8)}`, logger }).callback();
    const before = await request(app).post('/login').send(wrong);
    expect(before.status).toBe(401);
    expect(before.headers['ratelimit-remaining']).toBe(String(FAILURES_PER_IP - 1));

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
    expect(after.headers['ratelimit-limit']).toBe(String(FAILURES_PER_IP));
  });
});
