// The first-hour traps in Hono: the shared warning suite, a route's own rateLimit() beside the app's, and two app-level limiters.
import { getConnInfo } from '@hono/node-server/conninfo';
import { recordingLogger, runWarningSuite } from '@floodgate/adapter-suites';
import { MemoryStore } from '@floodgate/core';
import { Hono, type Context } from 'hono';
import { rateLimit, type RateLimitOptions } from '../src';
import { honoHarness } from './harness';
import { serve } from './serve';

runWarningSuite(honoHarness);

const ok = (c: Context) => c.json({ ok: true });
const limiter = (options: RateLimitOptions) => rateLimit({ getConnInfo, ...options });

describe('hono: how limiters are mounted', () => {
  it('rateLimit({ cost: 10 }) on a route beside an app-level limiter: FG_ROUTE_OWN_LIMITER once, naming the route and limiter.route', async () => {
    const rec = recordingLogger();
    const app = new Hono();
    app.use(limiter({ store: new MemoryStore(), limit: 100, windowMs: '1m', logger: rec.logger }));
    app.post('/reports', limiter({ cost: 10, logger: rec.logger }), ok);
    const send = await serve(app);
    for (let i = 0; i < 3; i++) expect((await send('/reports', { method: 'POST' })).status).toBe(200);
    expect(rec.codes()).toEqual(['FG_ROUTE_OWN_LIMITER']);
    expect(rec.lines[0]).toContain('POST /reports mounts a rateLimit() of its own (memory store, 60 per 60000 ms)');
    expect(rec.lines[0]).toContain('limiter.route({ ... })');
  });

  it("limiter.route({ cost: 10 }), the app's own store for a route's own limits, or switched off by name: no warning", async () => {
    const rec = recordingLogger();
    const app = new Hono();
    const store = new MemoryStore();
    const appLevel = limiter({ store, limit: 100, logger: rec.logger });
    app.use(appLevel);
    app.post('/reports', appLevel.route({ cost: 10 }), ok);
    app.post('/login', limiter({ store, limit: 5, logger: rec.logger }), ok);
    const off = recordingLogger();
    const other = new Hono();
    other.use(limiter({ logger: off.logger, warnings: { FG_ROUTE_OWN_LIMITER: false } }));
    other.post('/own', limiter({ cost: 10, logger: off.logger }), ok);
    const send = await serve(app);
    const sendOther = await serve(other);
    expect((await send('/reports', { method: 'POST' })).status).toBe(200);
    expect((await send('/login', { method: 'POST' })).status).toBe(200);
    expect((await sendOther('/own', { method: 'POST' })).status).toBe(200);
    expect(rec.lines).toEqual([]);
    expect(off.lines).toEqual([]);
  });

  it('two app-level limiters: both count (FG_COUNTED_TWICE once); a shadow second one, or switched off: none', async () => {
    for (const [second, expected] of [[{}, ['FG_COUNTED_TWICE']], [{ shadow: true }, []], [{ warnings: { FG_COUNTED_TWICE: false } }, []]] as const) {
      const rec = recordingLogger();
      const scopes: string[] = [];
      const app = new Hono();
      app.use(limiter({ limit: 100, logger: rec.logger, onDecision: (e) => scopes.push(`first ${e.scope}`) }));
      app.use(limiter({ limit: 1000, logger: rec.logger, onDecision: (e) => scopes.push(`second ${e.scope}`), ...second }));
      app.get('/r', ok);
      const send = await serve(app);
      for (let i = 0; i < 2; i++) expect((await send('/r')).status).toBe(200);
      // Neither steps aside for the other: each keys the route it reaches.
      expect(scopes).toEqual(['first GET /r', 'second GET /r', 'first GET /r', 'second GET /r']);
      expect(rec.codes()).toEqual(expected);
      if (expected.length) expect(rec.lines[0]).toContain('one request to GET /r was counted by');
    }
  });
});
