// The fastify-api example against a real redis-server: per-route config (tighter limit, cost, exemption), headers, 429.
// Over real HTTP (listen + fetch): light-my-request's inject() loads an ESM-only module Jest cannot require on Node 20.
import { randomUUID } from 'node:crypto';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import { LIMIT, REPORT_COST, SEARCH_LIMIT, createApp } from '../src/app';

let server: RedisServer;
let redis: Redis;
const apps: FastifyInstance[] = [];

beforeAll(async () => {
  server = await startRedis();
  redis = server.client({ autoResendUnfulfilledCommands: false });
});
afterAll(async () => {
  await Promise.all(apps.map((app) => app.close()));
  redis?.disconnect();
  await server?.stop();
});

interface Answer {
  statusCode: number;
  headers: Record<string, string>;
  body: unknown;
}
type Call = (path: string, init?: { method?: string; headers?: Record<string, string>; payload?: unknown }) => Promise<Answer>;

/** The keys the app "issued" for these tests. */
const API_KEYS = { 'key-alpha': 'alpha', 'key-search': 'search', 'key-other': 'other', 'key-reports': 'reports' };

/** A fresh app on its own key prefix (so tests never share counts), listening on a free loopback port. */
async function freshApp(): Promise<{ call: Call; prefix: string }> {
  const prefix = `fa-${randomUUID().slice(0, 8)}`;
  // A deadline a loaded machine keeps: the first call loads the script, and one past 100 ms is decided locally, without quota headers.
  const app = await createApp({ redis, prefix, apiKeys: API_KEYS, redisTimeoutMs: 30_000 });
  apps.push(app);
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const call: Call = async (path, init = {}) => {
    const res = await fetch(base + path, {
      method: init.method ?? 'GET',
      headers: { ...(init.payload === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
      body: init.payload === undefined ? undefined : JSON.stringify(init.payload),
    });
    const text = await res.text();
    return {
      statusCode: res.status,
      headers: Object.fromEntries(res.headers),
      body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
    };
  };
  return { call, prefix };
}

describe('fastify-api example', () => {
  it('answers with the default limit in draft-6 headers and keeps its counts in Redis', async () => {
    const { call, prefix } = await freshApp();
    const first = await call('/items', { headers: { 'x-api-key': 'key-alpha' } });
    expect(first.statusCode).toBe(200);
    expect(first.body).toEqual({ items: [{ id: 1 }, { id: 2 }] });
    expect(first.headers['ratelimit-limit']).toBe(String(LIMIT));
    expect(first.headers['ratelimit-remaining']).toBe(String(LIMIT - 1));
    expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
    const byId = await call('/items/7', { headers: { 'x-api-key': 'key-alpha' } });
    expect(byId.body).toEqual({ id: 7 });
    expect(byId.headers['ratelimit-remaining']).toBe(String(LIMIT - 1)); // its own route, its own bucket

    const [, keys] = await redis.scan('0', 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    expect(keys.length).toBeGreaterThanOrEqual(2);
    expect(keys.join(' ')).not.toContain('key-alpha');
  });

  it('applies the route config: /search has its own tighter limit, then 429 with Retry-After', async () => {
    const { call } = await freshApp();
    for (let i = 1; i <= SEARCH_LIMIT; i++) {
      const res = await call('/search?q=gate', { headers: { authorization: 'Bearer key-search' } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe(String(SEARCH_LIMIT));
      expect(res.headers['ratelimit-remaining']).toBe(String(SEARCH_LIMIT - i));
      // Sliding window counter: the quota is fully back within two windows.
      expect(Number(res.headers['ratelimit-reset'])).toBeLessThanOrEqual(20);
    }
    const denied = await call('/search?q=gate', { headers: { authorization: 'Bearer key-search' } });
    expect(denied.statusCode).toBe(429);
    expect(denied.headers['content-type']).toMatch(/application\/problem\+json/);
    const retryAfter = Number(denied.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeGreaterThanOrEqual(Number(denied.headers['ratelimit-reset'])); // never before the reset
    expect(retryAfter).toBeLessThanOrEqual(21); // two 10 s windows plus at most 1 s of jitter

    // Another caller (another key, or no key: the IP) is not affected.
    const other = await call('/search?q=gate', { headers: { 'x-api-key': 'key-other' } });
    expect(other.statusCode).toBe(200);
    expect(other.headers['ratelimit-remaining']).toBe(String(SEARCH_LIMIT - 1));
    const anonymous = await call('/search?q=gate');
    expect(anonymous.headers['ratelimit-remaining']).toBe(String(SEARCH_LIMIT - 1));
  });

  it(`draws ${REPORT_COST} units per report, then answers 429`, async () => {
    const { call } = await freshApp();
    for (let i = 1; i <= LIMIT / REPORT_COST; i++) {
      const res = await call('/reports', { method: 'POST', headers: { 'x-api-key': 'key-reports' }, payload: { from: '2024-01-01' } });
      expect(res.statusCode).toBe(201);
      expect(res.headers['ratelimit-remaining']).toBe(String(LIMIT - i * REPORT_COST));
    }
    const denied = await call('/reports', { method: 'POST', headers: { 'x-api-key': 'key-reports' }, payload: {} });
    expect(denied.statusCode).toBe(429);
    expect(Number(denied.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('leaves /health out of the limit', async () => {
    const { call } = await freshApp();
    const res = await call('/health');
    expect(res.statusCode).toBe(200);
    expect(res.headers['ratelimit-limit']).toBeUndefined();
  });
});
