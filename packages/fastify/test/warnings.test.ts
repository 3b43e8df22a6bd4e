// The first-hour traps in Fastify: the shared warning suite, routes declared before an un-awaited register, and two registrations.
import { getStatus, recordingLogger, runWarningSuite } from '@floodgate/adapter-suites';
import Fastify, { type FastifyInstance } from 'fastify';
import { rateLimit } from '../src';
import { fastifyHarness, listenedApps } from './harness';

runWarningSuite(fastifyHarness);

describe('fastify: how the plugin is registered', () => {
  const { agent, listen } = listenedApps();

  it('a route declared after an un-awaited register is unlimited, and says so: FG_ROUTE_NOT_LIMITED once, naming it and the fix', async () => {
    const rec = recordingLogger();
    const app = Fastify();
    void app.register(rateLimit, { limit: 1, logger: rec.logger });
    app.get('/early', async () => 'ok');
    await app.register(async (child) => {
      child.get('/late', async () => 'ok');
    });
    const port = await listen(app);
    expect([await getStatus(agent, port, '/late'), await getStatus(agent, port, '/late')]).toEqual([200, 429]);
    expect(rec.lines).toEqual([]);
    // The trap itself: /early passes every time.
    expect([await getStatus(agent, port, '/early'), await getStatus(agent, port, '/early'), await getStatus(agent, port, '/early')]).toEqual([200, 200, 200]);
    expect(rec.codes()).toEqual(['FG_ROUTE_NOT_LIMITED']);
    expect(rec.lines[0]).toContain('GET /early is not rate limited: it was declared before the @floodgate/fastify plugin loaded');
    expect(rec.lines[0]).toContain('await app.register(rateLimit, options)');
  });

  it('awaited, or switched off by name: no warning', async () => {
    for (const [awaited, warnings] of [[true, undefined], [false, { FG_ROUTE_NOT_LIMITED: false }]] as const) {
      const rec = recordingLogger();
      const app = Fastify();
      const registered = app.register(rateLimit, { limit: 1, logger: rec.logger, warnings });
      if (awaited) await registered;
      app.get('/r', async () => 'ok');
      const port = await listen(app);
      await getStatus(agent, port, '/r');
      await getStatus(agent, port, '/r');
      expect(rec.lines).toEqual([]);
    }
  });

  it('the plugin registered twice: FG_COUNTED_TWICE once; a shadow second one, or switched off: none', async () => {
    for (const [second, expected] of [[{}, ['FG_COUNTED_TWICE']], [{ shadow: true }, []], [{ warnings: { FG_COUNTED_TWICE: false } }, []]] as const) {
      const rec = recordingLogger();
      const app = Fastify();
      await app.register(rateLimit, { limit: 100, logger: rec.logger });
      await app.register(rateLimit, { limit: 1000, logger: rec.logger, ...second });
      app.get('/r', async () => 'ok');
      const port = await listen(app);
      for (let i = 0; i < 3; i++) expect(await getStatus(agent, port, '/r')).toBe(200);
      expect(rec.codes()).toEqual(expected);
    }
  });
});
