// The express-api example against a real redis-server: headers, API-key-then-IP buckets, the costly report route, 429.
import { randomUUID } from 'node:crypto';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import request from 'supertest';
import { DEFAULT_ESTIMATE, LIMIT, REPORT_COST, TOKENS_PER_DAY, createApp } from '../src/app';

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

/** The keys the app "issued" for these tests. */
const API_KEYS = { 'key-alpha': 'alpha', 'key-beta': 'beta', 'key-gamma': 'gamma', 'key-reports': 'reports', k: 'k' };

/** A fresh app on its own key prefix, so tests never share counts. */
function freshApp() {
  const prefix = `ex-${randomUUID().slice(0, 8)}`;
  return { app: createApp({ redis, redisTimeoutMs: 30_000, prefix, apiKeys: API_KEYS }), prefix };
}

async function keysUnder(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

describe('express-api example', () => {
  it('answers with draft-6 RateLimit headers and keeps its counts in Redis', async () => {
    const { app, prefix } = freshApp();
    const first = await request(app).get('/widgets').set('x-api-key', 'key-alpha');
    expect(first.status).toBe(200);
    expect(first.headers['ratelimit-limit']).toBe(String(LIMIT));
    expect(first.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
    expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
    expect(first.headers['retry-after']).toBeUndefined();
    expect(first.body.remaining).toBe(LIMIT - 1);

    const second = await request(app).get('/widgets').set('x-api-key', 'key-alpha');
    expect(second.headers['ratelimit-remaining']).toBe(String(LIMIT - 2));

    // The counts live in the real Redis, and the raw API key never appears in a key.
    const keys = await keysUnder(prefix);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.join(' ')).not.toContain('key-alpha');
    expect(keys.every((k) => /\{[^}]+\}/.test(k))).toBe(true);
  });

  it('keys on the API key first (either header), and on the IP without one', async () => {
    const { app } = freshApp();
    const bearer = await request(app).get('/widgets').set('authorization', 'Bearer key-beta');
    const header = await request(app).get('/widgets').set('x-api-key', 'key-beta');
    // Same key through both headers: one bucket.
    expect(bearer.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
    expect(header.headers['ratelimit-remaining']).toBe(String(LIMIT - 2));

    const other = await request(app).get('/widgets').set('x-api-key', 'key-gamma');
    expect(other.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));

    const anonymous1 = await request(app).get('/widgets');
    const anonymous2 = await request(app).get('/widgets');
    expect(anonymous1.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
    expect(anonymous2.headers['ratelimit-remaining']).toBe(String(LIMIT - 2));
  });

  it('limits a request with a key nobody issued by its IP: rotating invented keys buys no budget', async () => {
    const { app } = freshApp();
    const remaining: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await request(app).get('/widgets').set('x-api-key', `invented-${i}`);
      remaining.push(Number(res.headers['ratelimit-remaining']));
    }
    const anonymous = await request(app).get('/widgets');
    expect([...remaining, Number(anonymous.headers['ratelimit-remaining'])]).toEqual([1, 2, 3, 4, 5, 6].map((n) => LIMIT - n));
  });

  it('gives each route pattern its own bucket, whatever the path parameter', async () => {
    const { app } = freshApp();
    await request(app).get('/widgets').set('x-api-key', 'k');
    const a = await request(app).get('/widgets/1').set('x-api-key', 'k');
    const b = await request(app).get('/widgets/2').set('x-api-key', 'k');
    expect(a.body).toEqual({ id: 1 });
    expect(a.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
    expect(b.headers['ratelimit-remaining']).toBe(String(LIMIT - 2));
  });

  it(`draws ${REPORT_COST} units per report, then answers 429 with Retry-After`, async () => {
    const { app } = freshApp();
    const reports = LIMIT / REPORT_COST;
    for (let i = 1; i <= reports; i++) {
      const res = await request(app).post('/reports').set('authorization', 'Bearer key-reports').send({ from: '2024-01-01', to: '2024-01-31' });
      expect(res.status).toBe(201);
      expect(res.body.report.status).toBe('queued');
      expect(res.headers['ratelimit-remaining']).toBe(String(LIMIT - i * REPORT_COST));
    }
    const denied = await request(app).post('/reports').set('authorization', 'Bearer key-reports').send({});
    expect(denied.status).toBe(429);
    expect(denied.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(denied.headers['ratelimit-remaining']).toBe('0');
    const retryAfter = Number(denied.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeGreaterThanOrEqual(Number(denied.headers['ratelimit-reset'])); // never before the reset
    expect(retryAfter).toBeLessThanOrEqual(121); // sliding window counter: two 1 minute windows plus at most 1 s of jitter

    // Reports have their own bucket: reads by the same caller are untouched.
    const read = await request(app).get('/widgets').set('authorization', 'Bearer key-reports');
    expect(read.status).toBe(200);
    expect(read.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
  });

  it('leaves /health out of the limit', async () => {
    const { app } = freshApp();
    const res = await request(app).get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true });
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });
});

describe('express-api example: the token-metered completion route', () => {
  it('reserves max_tokens, charges the tokens generated, and shows the caller its own usage', async () => {
    const { app } = freshApp();
    const first = await request(app).post('/v1/complete').set('x-api-key', 'key-alpha').send({ prompt: 'one two three', max_tokens: 500 });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ tokens: 12, charged: 12 });
    // While reserved, the header counted the estimate (500); once settled, 12.
    expect(first.headers['ratelimit-remaining']).toBe(String(TOKENS_PER_DAY - 500));
    const usage = await request(app).get('/usage').set('x-api-key', 'key-alpha');
    expect(usage.status).toBe(200);
    expect(usage.body.routes[0]).toMatchObject({ route: 'POST /v1/complete', policies: [{ limit: TOKENS_PER_DAY, used: 12, remaining: TOKENS_PER_DAY - 12 }] });
    // Another caller (verified, or by IP) sees its own: nothing yet.
    expect((await request(app).get('/usage').set('x-api-key', 'key-beta')).body.routes[0].policies[0].used).toBe(0);
    expect((await request(app).get('/usage')).body.routes[0].policies[0].used).toBe(0);
  });

  it('a completion that generates more than it reserved puts the caller into debt: refused until the day pays it back', async () => {
    const { app } = freshApp();
    // No max_tokens: DEFAULT_ESTIMATE reserved, 300 words generate 1200 tokens, over the day's 1000.
    const long = await request(app).post('/v1/complete').set('x-api-key', 'key-gamma').send({ prompt: 'word '.repeat(300) });
    expect(long.body).toMatchObject({ tokens: 1_200, charged: 1_200 });
    expect(DEFAULT_ESTIMATE).toBeLessThan(1_200);
    const next = await request(app).post('/v1/complete').set('x-api-key', 'key-gamma').send({ prompt: 'hi', max_tokens: 1 });
    expect(next.status).toBe(429);
    expect(Number(next.headers['retry-after'])).toBeGreaterThan(3_600);
  });
});

describe('express-api example: runtime overrides from the admin route', () => {
  it('an admin sets a caller to 0 on one route: its next request there is refused, elsewhere served; cleared, served; no token: 404', async () => {
    const prefix = `ex-${randomUUID().slice(0, 8)}`;
    const app = createApp({ redis, redisTimeoutMs: 30_000, prefix, apiKeys: API_KEYS, adminToken: 'secret', logger: { warn() {}, error() {} } });
    const admin = { Authorization: 'Bearer secret' };
    expect((await request(app).get('/widgets')).status).toBe(200);
    expect((await request(app).post('/admin/overrides').send({ ip: '127.0.0.1', route: 'GET /widgets', limit: 0 })).status).toBe(404);
    const set = await request(app).post('/admin/overrides').set(admin).send({ ip: '127.0.0.1', route: 'GET /widgets', limit: 0, ttl: '1h', reason: 'scraper' });
    expect(set.status).toBe(201);
    expect(set.body).toMatchObject({ target: 'ip:127.0.0.1', scope: 'GET /widgets', limits: { default: 0 }, reason: 'scraper' });
    expect((await request(app).get('/widgets')).status).toBe(429);
    expect((await request(app).get('/widgets/1')).status).toBe(200);
    expect((await request(app).get('/admin/overrides').set(admin)).body.overrides).toHaveLength(1);
    expect((await request(app).post('/admin/overrides').set(admin).send({ ip: '127.0.0.1', route: 'GET /widgets', clear: true })).status).toBe(204);
    expect((await request(app).get('/widgets')).status).toBe(200);
    // Above the app's limitCeiling: refused with the reason.
    const high = await request(app).post('/admin/overrides').set(admin).send({ route: 'GET /widgets', limit: 20_000 });
    expect(high.status).toBe(400);
    expect(high.body.error).toMatch(/limitCeiling/);
  });
});
