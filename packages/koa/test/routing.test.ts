// Which bucket a Koa request lands in: @koa/router patterns through prefixes and nested routers, and one decision per request.
import { createServer, type Server } from 'node:http';
import Router from '@koa/router';
import { MemoryStore } from '@floodgate/core';
import Koa, { type Context } from 'koa';
import request from 'supertest';
import { rateLimit, type RateLimitOptions } from '../src';

const servers: Server[] = [];
afterAll(() => servers.forEach((s) => (s.closeAllConnections(), s.close())));

async function serve(app: Koa) {
  app.silent = true;
  const server = createServer(app.callback());
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return request(server);
}

const ok = (ctx: Context) => {
  ctx.body = { remaining: ctx.state.rateLimit?.remaining ?? null };
};

function setup(extra: RateLimitOptions = {}) {
  const scopes: string[] = [];
  const limiter = rateLimit({ store: new MemoryStore(), limit: 5, onDecision: (e) => scopes.push(e.scope), ...extra });
  return { limiter, scopes };
}

it('keys app-level requests on the full pattern of prefixed and nested routers', async () => {
  const { limiter, scopes } = setup();
  const items = new Router();
  items.get('/items/:id', ok);
  const orgs = new Router({ prefix: '/orgs/:org' });
  orgs.use('/teams/:team', items.routes());
  const app = new Koa();
  app.use(limiter);
  app.use(orgs.routes());
  const agent = await serve(app);
  await agent.get('/orgs/acme/teams/red/items/1').expect(200);
  const res = await agent.get('/orgs/x/teams/y/items/2').expect(200);
  expect(res.body.remaining).toBe(3);
  expect(scopes).toEqual(['GET /orgs/:org/teams/:team/items/:id', 'GET /orgs/:org/teams/:team/items/:id']);
});

it('keys a route-level middleware on its own route, and router.use() middleware on the route it reaches', async () => {
  const { limiter, scopes } = setup();
  const router = new Router({ prefix: '/api' });
  router.post('/login', limiter.route({ limit: 2, failMode: 'closed' }), ok);
  const other = setup();
  const second = new Router({ prefix: '/v2' });
  second.use(other.limiter);
  second.get('/users/:id', ok);
  const app = new Koa();
  app.use(router.routes());
  app.use(second.routes());
  const agent = await serve(app);
  await agent.post('/api/login').expect(200);
  await agent.post('/api/login').expect(200);
  await agent.post('/api/login').expect(429);
  await agent.get('/v2/users/1').expect(200);
  await agent.get('/v2/users/2').expect(200);
  expect(scopes).toEqual(['POST /api/login', 'POST /api/login', 'POST /api/login']);
  expect(other.scopes).toEqual(['GET /v2/users/:id', 'GET /v2/users/:id']);
});

it('lets a route with its own limiter decide alone: the app-level one steps aside', async () => {
  const { limiter, scopes } = setup();
  const own = setup({ limit: 1 });
  const router = new Router();
  router.get('/own', own.limiter, ok);
  router.get('/exempt', limiter.route(false), ok);
  router.get('/plain', ok);
  const app = new Koa();
  app.use(limiter);
  app.use(router.routes());
  const agent = await serve(app);
  await agent.get('/own').expect(200);
  await agent.get('/own').expect(429);
  for (let i = 0; i < 7; i++) await agent.get('/exempt').expect(200);
  await agent.get('/plain').expect(200);
  expect(scopes).toEqual(['GET /plain']);
  expect(own.scopes).toEqual(['GET /own', 'GET /own']);
});

it('keys unmatched paths and methods in one bucket, and honours a router host', async () => {
  const { limiter, scopes } = setup();
  const router = new Router({ host: 'api.example' });
  router.get('/a', ok);
  const app = new Koa();
  app.use(limiter);
  app.use(router.routes());
  const agent = await serve(app);
  await agent.get('/a').set('Host', 'api.example').expect(200);
  await agent.get('/a').set('Host', 'elsewhere.example').expect(404);
  await agent.delete('/a').set('Host', 'api.example').expect(404);
  await agent.get('/zzz/1').expect(404);
  expect(scopes).toEqual(['GET /a', '<unmatched>', '<unmatched>', '<unmatched>']);
});

it('keeps one bucket per route under parameterised prefixes, nested routers and regexp routes, whatever the URL', async () => {
  const { limiter, scopes } = setup({ limit: 2 });
  const inner = new Router();
  inner.get('/items', ok);
  const outer = new Router({ prefix: '/v/:version' });
  outer.use('/t/:tenant', inner.routes());
  const byRegexp = new Router();
  byRegexp.get(/^\/r\d+$/, ok);
  const app = new Koa();
  app.use(limiter);
  app.use(outer.routes());
  app.use(byRegexp.routes());
  const agent = await serve(app);
  for (const urls of [
    ['/v/1/t/a/items', '/v/2/t/b/items', '/v/12345/t/c/items', '/v/x/t/d/items', '/v/y/t/e/items'],
    ['/r1', '/r22', '/r333', '/r4444', '/r5'],
  ]) {
    scopes.length = 0;
    const statuses: number[] = [];
    for (const url of urls) statuses.push((await agent.get(url)).status);
    expect({ statuses, buckets: new Set(scopes).size }).toEqual({ statuses: [200, 200, 429, 429, 429], buckets: 1 });
    expect(scopes[0]).not.toMatch(/12345|333/);
  }
});

it('refuses misspelled and foreign option names at construction', () => {
  expect(() => rateLimit({ max: 5 } as never)).toThrow(/Unknown option `max` in rateLimit options: did you mean `limit`\?/);
  expect(() => rateLimit({ duration: 60_000 } as never)).toThrow(/did you mean `windowMs`\?/);
  expect(() => rateLimit().route({ failmode: 'closed' } as never)).toThrow(/did you mean `failMode`\?/);
});

it('throws at construction for bad options', () => {
  expect(() => rateLimit({ headers: ['draft-6', 'nope' as never] })).toThrow(/Invalid option `headers`: got "nope"/);
  expect(() => rateLimit({ limit: 0 })).toThrow(/Invalid option `options.limit`/);
  expect(() => rateLimit({ failMode: 'sometimes' as never })).toThrow(/Invalid option `failMode`/);
});
