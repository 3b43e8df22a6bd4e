// Fastify specifics: route config applied at registration, prefixes, the hook option, and option errors.
import type { AddressInfo } from 'node:net';
import { MemoryStore } from '@floodgate/core';
import Fastify, { type FastifyInstance } from 'fastify';
import { rateLimit, type RateLimitOptions } from '../src';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

async function listen(app: FastifyInstance) {
  apps.push(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return (url: string, init?: RequestInit) => fetch(`http://127.0.0.1:${port}${url}`, init);
}

function setup(extra: RateLimitOptions = {}) {
  const scopes: string[] = [];
  return { options: { store: new MemoryStore(), limit: 5, onDecision: (e: { scope: string }) => scopes.push(e.scope), ...extra }, scopes };
}

it('keys on the route pattern, prefix included, fixed when the route is registered', async () => {
  const { options, scopes } = setup();
  const app = Fastify();
  await app.register(rateLimit, options);
  await app.register(
    async (api) => {
      api.get('/users/:id', async (request) => ({ remaining: request.rateLimit?.remaining }));
    },
    { prefix: '/v1/:tenant' },
  );
  const get = await listen(app);
  expect(await (await get('/v1/acme/users/1')).json()).toEqual({ remaining: 4 });
  expect(await (await get('/v1/other/users/2')).json()).toEqual({ remaining: 3 });
  expect(scopes).toEqual(['GET /v1/:tenant/users/:id', 'GET /v1/:tenant/users/:id']);
});

it("runs in 'preHandler' when asked, so a key can use what authentication set", async () => {
  const { options } = setup({
    hook: 'preHandler',
    limit: 1,
    key: (request) => (request as unknown as { user?: string }).user,
  });
  const app = Fastify();
  app.decorateRequest('user', undefined);
  app.addHook('preValidation', async (request) => {
    (request as unknown as { user?: string }).user = String(request.headers['x-token'] ?? '');
  });
  await app.register(rateLimit, options);
  app.get('/a', async () => 'ok');
  const get = await listen(app);
  expect((await get('/a', { headers: { 'x-token': 'alice' } })).status).toBe(200);
  expect((await get('/a', { headers: { 'x-token': 'alice' } })).status).toBe(429);
  expect((await get('/a', { headers: { 'x-token': 'bob' } })).status).toBe(200);
});

it('lets one route override the hook and skips routes with rateLimit: false', async () => {
  const { options, scopes } = setup();
  const app = Fastify();
  // Between onRequest and preHandler: has the limiter decided yet?
  const decidedByPreValidation: Record<string, boolean> = {};
  app.addHook('preValidation', async (request) => {
    decidedByPreValidation[request.url] = request.rateLimit !== undefined;
  });
  await app.register(rateLimit, options);
  app.get('/free', { config: { rateLimit: false } }, async () => 'ok');
  app.get('/early', async (request) => ({ remaining: request.rateLimit?.remaining }));
  app.get('/late', { config: { rateLimit: { hook: 'preHandler', cost: 2 } } }, async (request) => ({ remaining: request.rateLimit?.remaining }));
  const get = await listen(app);
  const free = await get('/free');
  expect(free.headers.get('ratelimit-limit')).toBeNull();
  expect(await (await get('/early')).json()).toEqual({ remaining: 4 });
  expect(await (await get('/late')).json()).toEqual({ remaining: 3 });
  // The default hook (onRequest) decided before preValidation; the overridden one (preHandler) after it.
  expect(decidedByPreValidation).toEqual({ '/free': false, '/early': true, '/late': false });
  expect(scopes).toEqual(['GET /early', 'GET /late']);
});

it('throws for bad plugin options and bad route config when the app starts', async () => {
  const bad = Fastify();
  await expect(bad.register(rateLimit, { hook: 'onSend' as never })).rejects.toThrow(/Invalid option `hook`/);
  const route = Fastify();
  await route.register(rateLimit, { store: new MemoryStore() });
  expect(() => route.get('/x', { config: { rateLimit: { cost: -3 } } }, async () => 'ok')).toThrow(/Invalid option `cost`/);
  expect(() => route.get('/y', { config: { rateLimit: 'yes' as never } }, async () => 'ok')).toThrow(/config.rateLimit/);
  await route.close();
});

it('refuses unknown option names in the plugin options and in a route config, naming the route', async () => {
  const plugin = Fastify();
  await expect(plugin.register(rateLimit, { store: new MemoryStore(), timeWindow: 60_000 } as never)).rejects.toThrow(
    /Unknown option `timeWindow` in rateLimit options: did you mean `windowMs`\?/,
  );
  const route = Fastify();
  await route.register(rateLimit, { store: new MemoryStore() });
  expect(() => route.get('/login', { config: { rateLimit: { max: 5 } as never } }, async () => 'ok')).toThrow(
    /Unknown option `max` in GET \/login config\.rateLimit route options: did you mean `limit`\?/,
  );
  await route.close();
});

it('refuses, at registration, two routes of one group that define its bucket differently, naming both routes', async () => {
  const app = Fastify();
  await app.register(rateLimit, { store: new MemoryStore() });
  app.post('/login', { config: { rateLimit: { group: 'auth', limit: 3, windowMs: '1m' } } }, async () => 'ok');
  // Before: the two definitions shared one counter and reset each other (10 of 10 alternating requests admitted).
  expect(() => app.post('/reset-password', { config: { rateLimit: { group: 'auth', limit: 3, windowMs: '1h' } } }, async () => 'ok')).toThrow(
    /Bucket conflict: `auth` policy `default`.*3 per 60000 ms in the limiter for POST \/login.*3 per 3600000 ms in the limiter for POST \/reset-password/,
  );
  await app.close();
});

it('keeps one bucket per route under a parameterised prefix, whatever the URL', async () => {
  const { options, scopes } = setup({ limit: 2 });
  const app = Fastify();
  await app.register(rateLimit, options);
  await app.register(async (api) => void api.get('/items', async () => 'ok'), { prefix: '/v/:version' });
  const get = await listen(app);
  const statuses: number[] = [];
  for (const v of ['1', '2', '12345', 'x', 'y']) statuses.push((await get(`/v/${v}/items`)).status);
  expect(statuses).toEqual([200, 200, 429, 429, 429]);
  expect(new Set(scopes)).toEqual(new Set(['GET /v/:version/items']));
});
