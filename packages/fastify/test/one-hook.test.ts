// One Floodgate hook per matched request: the app-wide hook leaves a route after its first request; 404s, false routes, the warning and `hook` as before; and the fallback.
import { getStatus, recordingLogger } from '@floodgate/adapter-suites';
import Fastify, { type FastifyInstance } from 'fastify';
import { rateLimit, type RateLimitOptions } from '../src';
import { contextKeyOf, oneHook, withoutHook } from '../src/one-hook';
import { listenedApps } from './harness';

const { agent, listen } = listenedApps();

/** The hooks Fastify runs for one route and stage, by name, from its own route table (printRoutes reads each route's context). */
function hooksOf(app: FastifyInstance, path: string, stage: string, method = 'GET'): string[] {
  const lines = app.printRoutes({ includeHooks: true, commonPrefix: false }).split('\n');
  const at = lines.findIndex((l) => l.includes(`${path} (${method})`));
  if (at < 0) throw new Error(`no ${method} ${path} in printRoutes`);
  for (let i = at + 1; i < lines.length && lines[i].includes('•'); i++) {
    const m = /• \((\w+)\) (\[.*\])/.exec(lines[i]);
    if (m && m[1] === stage) return (JSON.parse(m[2]) as string[]).map((n) => n.replace(/\(\)$/, ''));
  }
  return [];
}

/** The Floodgate hooks among them: the route's own ('floodgate') and the app-wide one ('floodgateUnmatched<n>'). */
const floodgateHooks = (names: string[]) => names.filter((n) => n.startsWith('floodgate'));

async function app3(options: RateLimitOptions, register?: (app: FastifyInstance) => void): Promise<{ app: FastifyInstance; port: number }> {
  const app = Fastify();
  register?.(app);
  await app.register(rateLimit, options);
  app.get('/limited', async () => 'ok');
  app.get('/free', { config: { rateLimit: false } }, async () => 'ok');
  app.get('/late', { config: { rateLimit: { hook: 'preHandler' } } }, async () => 'ok');
  return { app, port: await listen(app) };
}

describe('fastify: one Floodgate hook per matched request', () => {
  it('after its first request a limited route runs its own hook only, an unlimited one none', async () => {
    const { app, port } = await app3({ limit: 100 });
    // At ready, Fastify put the app-wide hook on every route: two Floodgate hooks on /limited.
    expect(floodgateHooks(hooksOf(app, '/limited', 'onRequest'))).toEqual([expect.stringMatching(/^floodgateUnmatched\d+$/), 'floodgate']);
    for (const path of ['/limited', '/free', '/late']) expect(await getStatus(agent, port, path)).toBe(200);
    expect(floodgateHooks(hooksOf(app, '/limited', 'onRequest'))).toEqual(['floodgate']);
    expect(floodgateHooks(hooksOf(app, '/free', 'onRequest'))).toEqual([]);
    // A route of its own stage: its hook there, none in the plugin's stage.
    expect(floodgateHooks(hooksOf(app, '/late', 'onRequest'))).toEqual([]);
    expect(floodgateHooks(hooksOf(app, '/late', 'preHandler'))).toEqual(['floodgate']);
    // HEAD /limited is a route of its own, not yet requested: it keeps both until its first request.
    expect(floodgateHooks(hooksOf(app, '/limited', 'onRequest', 'HEAD'))).toHaveLength(2);
  });

  it('other hooks of the app keep their place and run on every request', async () => {
    const seen: string[] = [];
    const { app, port } = await app3({ limit: 100 }, (a) =>
      a.addHook('onRequest', (request, _reply, done) => {
        seen.push(request.url);
        done();
      }),
    );
    for (let i = 0; i < 3; i++) expect(await getStatus(agent, port, '/limited')).toBe(200);
    expect(seen).toEqual(['/limited', '/limited', '/limited']);
    expect(hooksOf(app, '/limited', 'onRequest')).toHaveLength(2); // the app's own, then Floodgate's
  });

  it('404s after matched routes lost the hook: still one <unmatched> bucket per caller, across URLs', async () => {
    const { port } = await app3({ limit: 3 });
    await getStatus(agent, port, '/free');
    expect(await getStatus(agent, port, '/limited')).toBe(200);
    expect([await getStatus(agent, port, '/a'), await getStatus(agent, port, '/b'), await getStatus(agent, port, '/c'), await getStatus(agent, port, '/d')]).toEqual([404, 404, 404, 429]);
    // The unlimited route stays unlimited, the limited one keeps its own bucket.
    for (let i = 0; i < 5; i++) expect(await getStatus(agent, port, '/free')).toBe(200);
    expect(await getStatus(agent, port, '/limited')).toBe(200);
  });

  it("the plugin's hook stage for 404s: preHandler, with the same bucket and a route's own stage kept", async () => {
    const { app, port } = await app3({ limit: 2, hook: 'preHandler' });
    expect([await getStatus(agent, port, '/x'), await getStatus(agent, port, '/y'), await getStatus(agent, port, '/z')]).toEqual([404, 404, 429]);
    expect(await getStatus(agent, port, '/limited')).toBe(200);
    expect(floodgateHooks(hooksOf(app, '/limited', 'preHandler'))).toEqual(['floodgate']);
    expect(floodgateHooks(hooksOf(app, '/limited', 'onRequest'))).toEqual([]);
  });

  it('a route declared before the plugin loaded still warns once, on its first request', async () => {
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
    expect([await getStatus(agent, port, '/early'), await getStatus(agent, port, '/early')]).toEqual([200, 200]);
    expect(rec.codes()).toEqual(['FG_ROUTE_NOT_LIMITED']);
    expect(floodgateHooks(hooksOf(app, '/early', 'onRequest'))).toEqual([]);
  });

  it('two registrations: each takes out its own hook only', async () => {
    const app = Fastify();
    await app.register(rateLimit, { limit: 100, warnings: { FG_COUNTED_TWICE: false } });
    await app.register(rateLimit, { limit: 100, warnings: { FG_COUNTED_TWICE: false } });
    app.get('/r', async () => 'ok');
    const port = await listen(app);
    expect(floodgateHooks(hooksOf(app, '/r', 'onRequest'))).toHaveLength(4);
    expect(await getStatus(agent, port, '/r')).toBe(200);
    expect(floodgateHooks(hooksOf(app, '/r', 'onRequest'))).toEqual(['floodgate', 'floodgate']);
  });
});

describe('fastify: where the route context cannot be reached, two hooks as before', () => {
  it('withoutHook changes nothing unless the list holds exactly one copy of the hook', () => {
    const named = (name: string) => Object.defineProperty(() => undefined, 'name', { value: name });
    const a = named('bound floodgateUnmatched7');
    const b = named('floodgate');
    expect(withoutHook([a, b], 'bound floodgateUnmatched7')).toEqual([b]);
    expect(withoutHook([a], 'bound floodgateUnmatched7')).toBeNull();
    expect(withoutHook([b], 'bound floodgateUnmatched7')).toBeUndefined();
    expect(withoutHook([a, a], 'bound floodgateUnmatched7')).toBeUndefined();
    expect(withoutHook(null, 'bound floodgateUnmatched7')).toBeUndefined();
    expect(withoutHook(a, 'bound floodgateUnmatched7')).toBeUndefined();
  });

  it("a request without Fastify's context symbol: detach leaves it alone and stops looking", () => {
    let looked = 0;
    const single = oneHook<object, unknown>('onRequest', (_q, _r, done) => done(), (request) => {
      looked++;
      return contextKeyOf(request);
    });
    const request = { onRequest: ['x'] };
    single.detach(request);
    single.detach(request);
    expect(request).toEqual({ onRequest: ['x'] });
    expect(looked).toBe(1);
  });

  it('the plugin with the lookup failing: both hooks stay on every route, behaviour unchanged', async () => {
    let limited: { app: FastifyInstance; port: number } | undefined;
    let rec: ReturnType<typeof recordingLogger> | undefined;
    await jest.isolateModulesAsync(async () => {
      jest.doMock('../src/one-hook', () => {
        const actual = jest.requireActual<typeof import('../src/one-hook')>('../src/one-hook');
        return { ...actual, oneHook: (stage: string, hook: never) => actual.oneHook(stage, hook, () => undefined) };
      });
      // The plugin loaded afresh in this registry, with the mocked lookup beneath it.
      const { rateLimit: isolated } = jest.requireActual<typeof import('../src')>('../src');
      rec = recordingLogger();
      const app = Fastify();
      void app.register(isolated, { limit: 2, logger: rec.logger });
      app.get('/early', async () => 'ok');
      await app.register(async (child) => {
        child.get('/limited', async () => 'ok');
        child.get('/free', { config: { rateLimit: false } }, async () => 'ok');
      });
      limited = { app, port: await listen(app) };
    });
    const { app, port } = limited!;
    expect([await getStatus(agent, port, '/limited'), await getStatus(agent, port, '/limited'), await getStatus(agent, port, '/limited')]).toEqual([200, 200, 429]);
    for (let i = 0; i < 3; i++) expect(await getStatus(agent, port, '/free')).toBe(200);
    expect([await getStatus(agent, port, '/a'), await getStatus(agent, port, '/b'), await getStatus(agent, port, '/c')]).toEqual([404, 404, 429]);
    expect([await getStatus(agent, port, '/early'), await getStatus(agent, port, '/early')]).toEqual([200, 200]);
    expect(rec!.codes()).toEqual(['FG_ROUTE_NOT_LIMITED']);
    // Today's two hooks, on every route, after any number of requests.
    expect(floodgateHooks(hooksOf(app, '/limited', 'onRequest'))).toEqual([expect.stringMatching(/^floodgateUnmatched\d+$/), 'floodgate']);
    expect(floodgateHooks(hooksOf(app, '/free', 'onRequest'))).toHaveLength(1);
  });
});
