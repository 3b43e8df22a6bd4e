// Which bucket a Hono request lands in: patterns through sub-apps and base paths, use() middleware, own limiters, and one decision per request.
import { getConnInfo } from '@hono/node-server/conninfo';
import { MemoryStore } from '@floodgate/core';
import { Hono, type Context } from 'hono';
import { cors } from 'hono/cors';
import { rateLimit, type RateLimitOptions } from '../src';
import { serve } from './serve';

const ok = (c: Context) => c.json({ remaining: c.get('rateLimit')?.remaining ?? null });

function setup(extra: RateLimitOptions = {}) {
  const scopes: string[] = [];
  const limiter = rateLimit({ store: new MemoryStore(), limit: 5, getConnInfo, onDecision: (e) => scopes.push(e.scope), ...extra });
  return { limiter, scopes };
}

it('keys app-level requests on the full pattern through app.route() sub-apps (with an onError of their own) and basePath', async () => {
  const { limiter, scopes } = setup();
  const items = new Hono();
  items.get('/items/:id', ok);
  const teams = new Hono();
  teams.onError((_e, c) => c.text('team error', 500)); // app.route() then wraps each handler
  teams.route('/teams/:team', items);
  const app = new Hono().basePath('/v1');
  app.use(limiter);
  app.route('/orgs/:org', teams);
  const send = await serve(app);
  expect((await send('/v1/orgs/acme/teams/red/items/1')).status).toBe(200);
  const res = await send('/v1/orgs/x/teams/y/items/2');
  expect(await res.json()).toEqual({ remaining: 3 });
  expect(scopes).toEqual(['GET /v1/orgs/:org/teams/:team/items/:id', 'GET /v1/orgs/:org/teams/:team/items/:id']);
});

it('keys a route-level middleware on its own route, and a use() middleware on the route it reaches', async () => {
  const { limiter, scopes } = setup();
  const app = new Hono();
  app.post('/login', limiter.route({ limit: 2, failMode: 'closed' }), ok);
  const other = setup();
  app.use('/v2/*', other.limiter);
  app.get('/v2/users/:id', ok);
  const send = await serve(app);
  const statuses = [];
  for (let i = 0; i < 3; i++) statuses.push((await send('/login', { method: 'POST' })).status);
  expect(statuses).toEqual([200, 200, 429]);
  expect((await send('/v2/users/1')).status).toBe(200);
  expect((await send('/v2/users/2')).status).toBe(200);
  expect(scopes).toEqual(['POST /login', 'POST /login', 'POST /login']);
  expect(other.scopes).toEqual(['GET /v2/users/:id', 'GET /v2/users/:id']);
});

it('lets a route with its own limiter decide alone: the app-level one steps aside', async () => {
  const { limiter, scopes } = setup();
  const own = setup({ limit: 1 });
  const app = new Hono();
  app.use(limiter);
  app.get('/own', own.limiter, ok);
  app.get('/exempt', limiter.route(false), ok);
  app.all('/hook', limiter.route({ cost: 2 }), ok);
  app.get('/plain', ok);
  const send = await serve(app);
  expect((await send('/own')).status).toBe(200);
  expect((await send('/own')).status).toBe(429);
  for (let i = 0; i < 7; i++) expect((await send('/exempt')).status).toBe(200);
  expect((await send('/hook', { method: 'PUT' })).headers.get('ratelimit-remaining')).toBe('3');
  expect((await send('/plain')).status).toBe(200);
  // app.all(): one bucket for every method (docs/adapters.md#per-route).
  expect(scopes).toEqual(['ALL /hook', 'GET /plain']);
  expect(own.scopes).toEqual(['GET /own', 'GET /own']);
});

it('keys requests that reach no route in one bucket, middleware mounted with use() and wildcards included', async () => {
  const { limiter, scopes } = setup();
  const app = new Hono();
  app.use(limiter);
  app.use('/api/*', cors());
  app.use('/api/*', async (_c, next) => next());
  app.get('/api/a', ok);
  app.all('/files/*', (c) => c.text('file'));
  const send = await serve(app);
  expect((await send('/api/a')).status).toBe(200);
  expect((await send('/api/zzz/1')).status).toBe(404);
  expect((await send('/api/a', { method: 'DELETE' })).status).toBe(404);
  expect((await send('/nothing/here')).status).toBe(404);
  expect((await send('/files/a/b.txt')).status).toBe(200);
  expect((await send('/files/c.txt', { method: 'POST' })).status).toBe(200);
  expect(scopes).toEqual(['GET /api/a', '<unmatched>', '<unmatched>', '<unmatched>', 'ALL /files/*', 'ALL /files/*']);
});

it('keeps one bucket per route under parameters, optional parameters and regexp parameters, whatever the URL', async () => {
  const { limiter, scopes } = setup({ limit: 2 });
  const app = new Hono();
  app.use(limiter);
  app.get('/v/:version/t/:tenant/items', ok);
  app.get('/r/:n{[0-9]+}', ok);
  app.get('/opt/:a?', ok);
  const send = await serve(app);
  for (const urls of [
    ['/v/1/t/a/items', '/v/2/t/b/items', '/v/12345/t/c/items', '/v/x/t/d/items', '/v/y/t/e/items'],
    ['/r/1', '/r/22', '/r/333', '/r/4444', '/r/5'],
    ['/opt', '/opt/1', '/opt/333', '/opt/x', '/opt/y'],
  ]) {
    scopes.length = 0;
    const statuses: number[] = [];
    for (const url of urls) statuses.push((await send(url)).status);
    expect({ statuses, buckets: new Set(scopes).size }).toEqual({ statuses: [200, 200, 429, 429, 429], buckets: 1 });
    expect(scopes[0]).not.toMatch(/12345|333/);
  }
});

it('refuses misspelled and foreign option names at construction', () => {
  expect(() => rateLimit({ max: 5 } as never)).toThrow(/Unknown option `max` in rateLimit options: did you mean `limit`\?/);
  expect(() => rateLimit({ windowMS: 60_000 } as never)).toThrow(/did you mean `windowMs`\?/);
  expect(() => rateLimit().route({ failmode: 'closed' } as never)).toThrow(/did you mean `failMode`\?/);
});

it('throws at construction for bad options', () => {
  expect(() => rateLimit({ headers: ['draft-6', 'nope' as never] })).toThrow(/Invalid option `headers`: got "nope"/);
  expect(() => rateLimit({ limit: 0 })).toThrow(/Invalid option `options.limit`/);
  expect(() => rateLimit(5 as never)).toThrow(/Invalid option `options`/);
  expect(() => rateLimit({ getConnInfo: 'node' as never })).toThrow(/Invalid option `getConnInfo`/);
  expect(() => rateLimit({ trustProxy: ['10.0.0.0/33'] })).toThrow(/Invalid option `trustProxy\[0\]`/);
  expect(() => rateLimit({ trustProxy: 'loopback' as never })).toThrow(/Invalid option `trustProxy`/);
  // Accepted (so shared option objects work) and checked, though it changes nothing on Hono (docs/adapters.md).
  expect(() => rateLimit({ respondDirectly: 'yes' as never })).toThrow(/respondDirectly.*true or false/);
});
