// Which bucket a request lands in on Express 4 and 5: full patterns through nested and parameterised mounts.
import { createServer, type Server } from 'node:http';
import { MemoryStore } from '@floodgate/core';
import type { Express, Request, Response } from 'express';
import express5 from 'express';
import request from 'supertest';
import { rateLimit, type RateLimitOptions } from '../src';

const express4: typeof express5 = require('express4');

const servers: Server[] = [];
afterAll(() => servers.forEach((s) => (s.closeAllConnections(), s.close())));

async function serve(app: Express) {
  const server = createServer(app);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return request(server);
}

const ok = (req: Request, res: Response) => res.json({ remaining: req.rateLimit?.remaining ?? null });

for (const [version, express] of [['4', express4], ['5', express5]] as const) {
  describe(`express ${version}`, () => {
    function setup(extra: RateLimitOptions = {}) {
      const scopes: string[] = [];
      const limiter = rateLimit({ store: new MemoryStore(), limit: 5, onDecision: (e) => scopes.push(e.scope), ...extra });
      return { limiter, scopes };
    }

    it('keys app-level requests on the full pattern through parameterised and nested mounts', async () => {
      const { limiter, scopes } = setup();
      const app = express();
      app.use(limiter);
      const items = express.Router();
      items.get('/items/:id', ok);
      const orgs = express.Router();
      orgs.use('/teams/:team', items);
      app.use('/orgs/:org', orgs);
      const agent = await serve(app);
      await agent.get('/orgs/acme/teams/red/items/1').expect(200);
      await agent.get('/ORGS/other/teams/blue/items/2/').expect(200);
      await agent.get('/orgs/a%2Fb/teams/x/items/3').expect(200);
      expect(scopes).toEqual([
        'GET /orgs/:org/teams/:team/items/:id',
        'GET /orgs/:org/teams/:team/items/:id',
        'GET /orgs/:org/teams/:team/items/:id',
      ]);
      const res = await agent.get('/orgs/zzz/teams/q/items/4').expect(200);
      expect(res.body.remaining).toBe(1);
    });

    it('keys a route-level middleware on its route, mounts included, whatever the URL', async () => {
      const { limiter, scopes } = setup();
      const app = express();
      const router = express.Router();
      router.post('/reports/:kind', limiter.route({ cost: 2 }), ok);
      app.use('/orgs/:org', router);
      const agent = await serve(app);
      const first = await agent.post('/orgs/acme/reports/daily').expect(200);
      const second = await agent.post('/orgs/other/reports/weekly').expect(200);
      expect([first.body.remaining, second.body.remaining]).toEqual([3, 1]);
      expect(scopes).toEqual(['POST /orgs/:org/reports/:kind', 'POST /orgs/:org/reports/:kind']);
    });

    it('lets a route with its own limiter decide alone: the app-level one steps aside', async () => {
      const { limiter, scopes } = setup();
      const own = setup({ limit: 2 });
      const app = express();
      app.use(limiter);
      app.get('/own', own.limiter, ok);
      app.get('/exempt', limiter.route(false), ok);
      app.get('/plain', ok);
      const agent = await serve(app);
      await agent.get('/own').expect(200);
      await agent.get('/own').expect(200);
      await agent.get('/own').expect(429);
      for (let i = 0; i < 7; i++) await agent.get('/exempt').expect(200);
      await agent.get('/plain').expect(200);
      expect(scopes).toEqual(['GET /plain']);
      expect(own.scopes).toEqual(['GET /own', 'GET /own', 'GET /own']);
    });

    it('keys requests that match no route, and methods a route does not serve, in one unmatched bucket', async () => {
      const { limiter, scopes } = setup();
      const app = express();
      app.use(limiter);
      app.get('/a', ok);
      const agent = await serve(app);
      await agent.get('/x/1').expect(404);
      await agent.get('/y/2').expect(404);
      await agent.delete('/a').expect(404);
      expect(scopes).toEqual(['<unmatched>', '<unmatched>', '<unmatched>']);
    });

    it('inside mounted sub-apps keys on the mount patterns plus the route, never the URL', async () => {
      const { limiter, scopes } = setup();
      const sub = express();
      sub.use(limiter);
      const nested = express.Router();
      nested.get('/things/:id', limiter.route({ cost: 2 }), ok);
      sub.use('/t', nested);
      sub.get('/plain/:id', ok);
      const app = express();
      app.use('/v1/:tenant', sub);
      const agent = await serve(app);
      expect((await agent.get('/v1/acme/t/things/1').expect(200)).body.remaining).toBe(3);
      expect((await agent.get('/v1/other/t/things/2').expect(200)).body.remaining).toBe(1);
      await agent.get('/v1/acme/plain/1').expect(200);
      await agent.get('/v1/other/plain/2').expect(200);
      await agent.get('/v1/acme/nothing').expect(404);
      expect(scopes).toEqual([
        'GET /v1/:tenant/t/things/:id',
        'GET /v1/:tenant/t/things/:id',
        'GET /v1/:tenant/plain/:id',
        'GET /v1/:tenant/plain/:id',
        '<unmatched>',
      ]);
    });

    it('keeps one bucket per route under regexp, array, parameter and pattern mounts, whatever the URL', async () => {
      const { limiter, scopes } = setup({ limit: 2 });
      const app = express();
      app.use(limiter);
      const mounts: [string, unknown, string[]][] = [
        ['regexp', /\/v\d+/, ['/v1', '/v2', '/v12345', '/v77', '/v3']],
        ['array', ['/a', '/b'], ['/a', '/b', '/A', '/B', '/a']],
        ['parameter', '/orgs/:org', ['/orgs/x', '/orgs/y', '/orgs/zz', '/ORGS/q', '/orgs/w']],
        ['non-capturing group', '/n/(\\d+)', ['/n/1', '/n/22', '/n/333', '/n/4444', '/n/5']],
        ['optional', '/opt/:id?', ['/opt/1', '/opt/2', '/opt/3', '/opt/4', '/opt/5']],
      ];
      // Express 5 reads the mounts itself; path-to-regexp 8 has no regexp-in-string groups or `?` params.
      const usable = version === '4' ? mounts : mounts.filter(([name]) => name === 'regexp' || name === 'array' || name === 'parameter');
      for (const [, mount] of usable) {
        const router = express.Router();
        router.get('/items', ok);
        app.use(mount as string, router);
      }
      const agent = await serve(app);
      for (const [name, , prefixes] of usable) {
        scopes.length = 0;
        const statuses: number[] = [];
        for (const p of prefixes) statuses.push((await agent.get(`${p}/items`)).status);
        // One bucket: two admitted, then 429 whatever the URL; a bucket per URL would admit all five.
        expect({ name, statuses, buckets: new Set(scopes).size }).toEqual({ name, statuses: [200, 200, 429, 429, 429], buckets: 1 });
        expect(scopes[0]).not.toMatch(/v12345|zz|333/);
      }
    });

    it('passes a failing key function to the error handler, and the app keeps serving', async () => {
      const { limiter } = setup({
        key: (req) => {
          if (req.headers['x-boom']) throw new Error('boom');
          return undefined;
        },
      });
      const app = express();
      app.use(limiter);
      app.get('/a', ok);
      app.use((err: Error, _req: Request, res: Response, _next: unknown) => res.status(500).json({ error: err.message }));
      const agent = await serve(app);
      expect((await agent.get('/a').set('x-boom', '1').expect(500)).body).toEqual({ error: 'boom' });
      await agent.get('/a').expect(200);
    });
  });
}

it('throws at construction for bad options, naming the option', () => {
  expect(() => rateLimit({ headers: 'draft-7' as never })).toThrow(/Invalid option `headers`: got "draft-7"/);
  expect(() => rateLimit({ cost: -1 })).toThrow(/Invalid option `cost`/);
  expect(() => rateLimit({ group: 'no spaces' })).toThrow(/Invalid option `group`/);
  expect(() => rateLimit({ retryAfterJitterMs: 1.5 })).toThrow(/Invalid option `retryAfterJitterMs`/);
  expect(() => rateLimit().route({ limits: [] })).toThrow(/Invalid option `limits`/);
});

it('refuses misspelled and foreign option names at construction, naming the option meant', () => {
  expect(() => rateLimit({ max: 5 } as never)).toThrow(/Unknown option `max` in rateLimit options: did you mean `limit`\?/);
  expect(() => rateLimit({ windowMS: 60_000 } as never)).toThrow(/did you mean `windowMs`\?/);
  expect(() => rateLimit({ keyGenerator: () => 'k' } as never)).toThrow(/did you mean `key`\?/);
  expect(() => rateLimit().route({ failmode: 'closed' } as never)).toThrow(/did you mean `failMode`\?/);
});
