// The first-hour traps in Express: the shared warning suite, a route's own rateLimit() beside the app's, and two app-level limiters.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'node:http';
import { getStatus, recordingLogger, runWarningSuite } from '@floodgate/adapter-suites';
import { MemoryStore } from '@floodgate/core';
import express from 'express';
import { rateLimit } from '../src';
import { expressHarness } from './harness';

runWarningSuite(expressHarness(5));

describe('express: how limiters are mounted', () => {
  const agent = new Agent({ keepAlive: true });
  let servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => { s.closeAllConnections(); s.close(r); })));
    servers = [];
  });
  afterAll(() => agent.destroy());

  async function listen(app: express.Express): Promise<number> {
    const server = app.listen(0, '127.0.0.1');
    servers.push(server);
    await new Promise((r) => server.once('listening', r));
    return (server.address() as AddressInfo).port;
  }

  it("README's old per-route form, rateLimit({ cost: 10 }) on a route beside an app-level limiter: FG_ROUTE_OWN_LIMITER once, naming the route and limiter.route", async () => {
    const rec = recordingLogger();
    const app = express();
    const store = new MemoryStore();
    app.use(rateLimit({ store, limit: 100, windowMs: '1m', logger: rec.logger }));
    app.post('/reports', rateLimit({ cost: 10, logger: rec.logger }), (_req, res) => res.json({ ok: true }));
    const port = await listen(app);
    for (let i = 0; i < 3; i++) expect(await getStatus(agent, port, '/reports', {}, 'POST')).toBe(200);
    expect(rec.codes()).toEqual(['FG_ROUTE_OWN_LIMITER']);
    expect(rec.lines[0]).toContain('POST /reports mounts a rateLimit() of its own (memory store, 60 per 60000 ms)');
    expect(rec.lines[0]).toContain('limiter.route({ ... })');
  });

  it('limiter.route({ cost: 10 }), the same limiter: no warning; switched off by name: no warning either', async () => {
    const rec = recordingLogger();
    const app = express();
    const limiter = rateLimit({ limit: 100, windowMs: '1m', logger: rec.logger });
    app.use(limiter);
    app.post('/reports', limiter.route({ cost: 10 }), (_req, res) => res.json({ ok: true }));
    const off = recordingLogger();
    const other = express();
    other.use(rateLimit({ logger: off.logger, warnings: { FG_ROUTE_OWN_LIMITER: false } }));
    other.post('/own', rateLimit({ cost: 10, logger: off.logger }), (_req, res) => res.json({ ok: true }));
    const port = await listen(app);
    const otherPort = await listen(other);
    expect(await getStatus(agent, port, '/reports', {}, 'POST')).toBe(200);
    expect(await getStatus(agent, otherPort, '/own', {}, 'POST')).toBe(200);
    expect(rec.lines).toEqual([]);
    expect(off.lines).toEqual([]);
  });

  it("a route's own rateLimit() given the app-level limiter's store (a login with its own limits): no warning", async () => {
    const rec = recordingLogger();
    const app = express();
    const store = new MemoryStore();
    app.use(rateLimit({ store, limit: 100, logger: rec.logger }));
    app.post('/login', rateLimit({ store, limit: 5, logger: rec.logger }), (_req, res) => res.json({ ok: true }));
    const port = await listen(app);
    expect(await getStatus(agent, port, '/login', {}, 'POST')).toBe(200);
    expect(rec.lines).toEqual([]);
  });

  it('two app-level limiters on one app: FG_COUNTED_TWICE once; a shadow second one, or the warning switched off: none', async () => {
    const twice = recordingLogger();
    const app = express();
    app.use(rateLimit({ limit: 100, logger: twice.logger }));
    app.use(rateLimit({ limit: 1000, windowMs: '1h', logger: twice.logger }));
    app.get('/r', (_req, res) => res.json({ ok: true }));
    const port = await listen(app);
    for (let i = 0; i < 3; i++) expect(await getStatus(agent, port, '/r')).toBe(200);
    expect(twice.codes()).toEqual(['FG_COUNTED_TWICE']);
    expect(twice.lines[0]).toMatch(/one request to GET \/r was counted by rateLimit\(\) at .*warnings\.test\.ts:\d+:\d+ and again by rateLimit\(\) at .*warnings\.test\.ts/);

    for (const second of [{ shadow: true }, { warnings: { FG_COUNTED_TWICE: false } }]) {
      const quiet = recordingLogger();
      const other = express();
      other.use(rateLimit({ limit: 100, logger: quiet.logger }));
      other.use(rateLimit({ limit: 1000, logger: quiet.logger, ...second }));
      other.get('/r', (_req, res) => res.json({ ok: true }));
      const otherPort = await listen(other);
      for (let i = 0; i < 3; i++) expect(await getStatus(agent, otherPort, '/r')).toBe(200);
      expect(quiet.lines).toEqual([]);
    }
  });
});
