// The nestjs-api example on Express and Fastify against a real redis-server: headers, API key then IP, the costly report route, the search limit, 429.
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { LIMIT, REPORT_COST, SEARCH_LIMIT } from '../src/app-module';
import { createApp, type Platform } from '../src/create-app';

let server: RedisServer;
let redis: Redis;
const apps: INestApplication[] = [];

beforeAll(async () => {
  server = await startRedis();
  redis = server.client({ autoResendUnfulfilledCommands: false });
});
afterEach(async () => {
  for (const app of apps.splice(0)) {
    (app.getHttpServer() as Server).closeAllConnections();
    await app.close();
  }
});
afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

const API_KEYS = { 'key-alpha': 'alpha', 'key-beta': 'beta' };

/** A fresh app on its own key prefix, listening on loopback; a fetch for its paths. */
async function freshApp(platform: Platform) {
  // A deadline a loaded machine cannot miss: past the default 100 ms a call is answered by the failure policy (no quota headers).
  const app = await createApp(platform, { redis, redisTimeoutMs: 30_000, prefix: `nx-${randomUUID().slice(0, 8)}`, apiKeys: API_KEYS });
  apps.push(app);
  await app.listen(0, '127.0.0.1');
  const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
  return (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${port}${path}`, init);
}

describe.each(['express', 'fastify'] as Platform[])('nestjs-api example on %s', (platform) => {
  it('answers with RateLimit headers per route pattern, and keys on the API key first, else the IP', async () => {
    const get = await freshApp(platform);
    const first = await get('/widgets', { headers: { 'x-api-key': 'key-alpha' } });
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-limit')).toBe(String(LIMIT));
    expect(first.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1));
    expect(((await first.json()) as { remaining: number }).remaining).toBe(LIMIT - 1);
    expect((await get('/widgets', { headers: { authorization: 'Bearer key-alpha' } })).headers.get('ratelimit-remaining')).toBe(String(LIMIT - 2));
    expect((await get('/widgets', { headers: { 'x-api-key': 'key-beta' } })).headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1));
    // An invented key is limited by the IP, with IP-only requests.
    expect((await get('/widgets', { headers: { 'x-api-key': 'made-up' } })).headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1));
    expect((await get('/widgets')).headers.get('ratelimit-remaining')).toBe(String(LIMIT - 2));
    // /widgets/1 and /widgets/2: one bucket.
    await get('/widgets/1');
    expect((await get('/widgets/2')).headers.get('ratelimit-remaining')).toBe(String(LIMIT - 2));
    // The health routes are not limited.
    expect((await get('/health')).headers.get('ratelimit-limit')).toBeNull();
    expect(await (await get('/healthz')).json()).toMatchObject({ healthy: true });
  });

  it(`draws ${REPORT_COST} units per report and refuses the report that does not fit with problem+json`, async () => {
    const get = await freshApp(platform);
    const post = () => get('/reports', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'key-alpha' }, body: JSON.stringify({ from: 1, to: 2 }) });
    for (let i = 1; i <= LIMIT / REPORT_COST; i++) {
      const res = await post();
      expect(res.status).toBe(201);
      expect(res.headers.get('ratelimit-remaining')).toBe(String(LIMIT - i * REPORT_COST));
    }
    const denied = await post();
    expect(denied.status).toBe(429);
    expect(Number(denied.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(denied.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await denied.json()).toMatchObject({ status: 429, title: 'Quota Exceeded', 'violated-policies': ['default'] });
  });

  it(`allows ${SEARCH_LIMIT} searches per 10 seconds, then 429 with Retry-After`, async () => {
    const get = await freshApp(platform);
    const statuses: number[] = [];
    for (let i = 0; i <= SEARCH_LIMIT; i++) statuses.push((await get(`/search?q=${i}`)).status);
    expect(statuses).toEqual([...Array(SEARCH_LIMIT).fill(200), 429]);
    const again = await get('/search?q=x');
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(again.headers.get('retry-after'))).toBeLessThanOrEqual(11);
  });
});
