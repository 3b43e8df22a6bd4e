// The first-hour traps in Koa: the shared warning suite, a route's own rateLimit() beside the app's, and two app-level limiters.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'node:http';
import { getStatus, recordingLogger, runWarningSuite } from '@floodgate/adapter-suites';
import { MemoryStore } from '@floodgate/core';
import Koa from 'koa';
import Router from '@koa/router';
import { rateLimit } from '../src';
import { koaHarness } from './harness';

runWarningSuite(koaHarness);

describe('koa: how limiters are mounted', () => {
  const agent = new Agent({ keepAlive: true });
  let servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => { s.closeAllConnections(); s.close(r); })));
    servers = [];
  });
  afterAll(() => agent.destroy());

  async function listen(app: Koa): Promise<number> {
    const server = createServer(app.callback());
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return (server.address() as AddressInfo).port;
  }
  const ok = (ctx: Koa.Context) => { ctx.body = { ok: true }; };

  it('rateLimit({ cost: 10 }) on a route beside an app-level limiter: FG_ROUTE_OWN_LIMITER once, naming the route and limiter.route', async () => {
    const rec = recordingLogger();
    const app = new Koa();
    const router = new Router();
    app.use(rateLimit({ store: new MemoryStore(), limit: 100, windowMs: '1m', logger: rec.logger }));
    router.post('/reports', rateLimit({ cost: 10, logger: rec.logger }), ok);
    app.use(router.routes());
    const port = await listen(app);
    for (let i = 0; i < 3; i++) expect(await getStatus(agent, port, '/reports', {}, 'POST')).toBe(200);
    expect(rec.codes()).toEqual(['FG_ROUTE_OWN_LIMITER']);
    expect(rec.lines[0]).toContain('POST /reports mounts a rateLimit() of its own (memory store, 60 per 60000 ms)');
  });

  it('limiter.route({ cost: 10 }): no warning; switched off by name: none either', async () => {
    const rec = recordingLogger();
    const app = new Koa();
    const router = new Router();
    const limiter = rateLimit({ limit: 100, logger: rec.logger });
    app.use(limiter);
    router.post('/reports', limiter.route({ cost: 10 }), ok);
    app.use(router.routes());
    const off = recordingLogger();
    const other = new Koa();
    const otherRouter = new Router();
    other.use(rateLimit({ logger: off.logger, warnings: { FG_ROUTE_OWN_LIMITER: false } }));
    otherRouter.post('/own', rateLimit({ cost: 10, logger: off.logger }), ok);
    other.use(otherRouter.routes());
    const port = await listen(app);
    const otherPort = await listen(other);
    expect(await getStatus(agent, port, '/reports', {}, 'POST')).toBe(200);
    expect(await getStatus(agent, otherPort, '/own', {}, 'POST')).toBe(200);
    expect(rec.lines).toEqual([]);
    expect(off.lines).toEqual([]);
  });

  it("a route's own rateLimit() given the app-level limiter's store (a login with its own limits): no warning", async () => {
    const rec = recordingLogger();
    const app = new Koa();
    const router = new Router();
    const store = new MemoryStore();
    app.use(rateLimit({ store, limit: 100, logger: rec.logger }));
    router.post('/login', rateLimit({ store, limit: 5, logger: rec.logger }), ok);
    app.use(router.routes());
    const port = await listen(app);
    expect(await getStatus(agent, port, '/login', {}, 'POST')).toBe(200);
    expect(rec.lines).toEqual([]);
  });

  it('two app-level limiters: FG_COUNTED_TWICE once; a shadow second one, or switched off: none', async () => {
    for (const [second, expected] of [[{}, ['FG_COUNTED_TWICE']], [{ shadow: true }, []], [{ warnings: { FG_COUNTED_TWICE: false } }, []]] as const) {
      const rec = recordingLogger();
      const app = new Koa();
      const router = new Router();
      app.use(rateLimit({ limit: 100, logger: rec.logger }));
      app.use(rateLimit({ limit: 1000, logger: rec.logger, ...second }));
      router.get('/r', ok);
      app.use(router.routes());
      const port = await listen(app);
      for (let i = 0; i < 3; i++) expect(await getStatus(agent, port, '/r')).toBe(200);
      expect(rec.codes()).toEqual(expected);
    }
  });
});
