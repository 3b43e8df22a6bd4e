// The hono-api example on @hono/node-server against a real redis-server: headers, API-key-then-IP buckets, the costly report route, the login, 429.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { DEMO_PASSWORD, LIMIT, LOGIN_FAILURES, REPORT_COST, createApp } from '../src/app';

let server: RedisServer;
let redis: Redis;
const servers: Server[] = [];

beforeAll(async () => {
  server = await startRedis();
  redis = server.client({ autoResendUnfulfilledCommands: false });
  await redis.ping();
});
afterAll(async () => {
  for (const s of servers) (s.closeAllConnections(), s.close());
  redis?.disconnect();
  await server?.stop();
});

/** A fresh app on its own key prefix, served on loopback; returns a request function. */
async function freshApp(trustProxy?: string[]) {
  const app = createApp({ redis, redisTimeoutMs: 30_000, prefix: `ex-${randomUUID().slice(0, 8)}`, trustProxy, apiKeys: { 'k-alpha': 'alpha' } });
  const server = createServer(getRequestListener(app.fetch));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${port}${path}`, init);
}

it('answers with draft-6 RateLimit headers, one bucket per route pattern, per API key first and else per IP', async () => {
  const send = await freshApp();
  const first = await send('/widgets/1', { headers: { 'x-api-key': 'k-alpha' } });
  expect(first.status).toBe(200);
  expect(first.headers.get('ratelimit-limit')).toBe(String(LIMIT));
  expect(first.headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1));
  expect(await first.json()).toEqual({ id: '1', remaining: LIMIT - 1 });
  // Another id, the same pattern; the same key through the other header: one bucket.
  expect((await send('/widgets/2', { headers: { authorization: 'Bearer k-alpha' } })).headers.get('ratelimit-remaining')).toBe(String(LIMIT - 2));
  // Without a key, or with one nobody issued: the client IP's own bucket.
  expect((await send('/widgets/3')).headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1));
  expect((await send('/widgets/4', { headers: { 'x-api-key': 'invented' } })).headers.get('ratelimit-remaining')).toBe(String(LIMIT - 2));
});

it('draws the report cost from the budget and answers 429 with Retry-After and problem+json once it is spent', async () => {
  const send = await freshApp();
  const statuses: number[] = [];
  let last: Response | undefined;
  for (let i = 0; i <= LIMIT / REPORT_COST; i++) {
    last = await send('/reports', { method: 'POST' });
    statuses.push(last.status);
  }
  expect(statuses).toEqual([...Array(LIMIT / REPORT_COST).fill(200), 429]);
  expect(Number(last!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  expect(last!.headers.get('content-type')).toBe('application/problem+json');
  expect(await last!.json()).toMatchObject({ status: 429, title: 'Quota Exceeded' });
});

it('counts only failed logins: successes are free, the sixth failure is refused', async () => {
  const send = await freshApp();
  const login = (password: string) => send('/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password }) }).then((r) => r.status);
  const ok: number[] = [];
  for (let i = 0; i < 10; i++) ok.push(await login(DEMO_PASSWORD));
  expect(ok).toEqual(Array(10).fill(200));
  const failed: number[] = [];
  for (let i = 0; i <= LOGIN_FAILURES; i++) failed.push(await login('guess'));
  expect(failed).toEqual([...Array(LOGIN_FAILURES).fill(401), 429]);
});

it('never limits the health route, and reads X-Forwarded-For only from a listed proxy', async () => {
  const send = await freshApp(['127.0.0.1', '::1']);
  for (let i = 0; i < 5; i++) expect((await send('/health')).status).toBe(200);
  expect((await send('/health')).headers.get('ratelimit-limit')).toBeNull();
  expect((await send('/widgets/1', { headers: { 'x-forwarded-for': '203.0.113.1' } })).headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1));
  expect((await send('/widgets/1', { headers: { 'x-forwarded-for': '203.0.113.2' } })).headers.get('ratelimit-remaining')).toBe(String(LIMIT - 1));
});
