// The route-merge suite every adapter runs: a route's options merge over the ones it inherits by core's one rule (mergeRouteOptions), a calendar window replacing an inherited windowMs included.
import { Agent, request as httpRequest } from 'node:http';
import { MemoryStore } from '@floodgate/core';
import type { AdapterHarness, RunningApp } from './harness';
import { quietLogger } from './requests';

/** One GET; resolves with its status and RateLimit-Limit header. */
function getLimit(agent: Agent, port: number, path: string): Promise<[number, string | null]> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'GET', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve([res.statusCode ?? 0, (res.headers['ratelimit-limit'] as string | undefined) ?? null]));
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Runs the route-merge suite against `h`: the inherited layer (`groupOptions`: Nest's controller,
 * every other framework's app-level limiter) says `{ windowMs: '1m', limit: 5 }`; one route says
 * `{ window: { every: 'day' }, limit: 2 }`. Core's rule lets the route's calendar window replace
 * the inherited windowMs (the two together are FG_INVALID_OPTION), so the daily route admits 2 and
 * the other route keeps the inherited 5. Issue #43: Nest's own copy of the merge lacked this rule.
 */
export function runRouteMergeSuite(h: AdapterHarness): void {
  describe(`route options merge through ${h.name}`, () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let app: RunningApp | undefined;
    afterAll(async () => {
      agent.destroy();
      await app?.close();
    });

    it("a route's calendar window replaces the windowMs it inherits; a route with no options keeps the inherited limit", async () => {
      app = await h.start({
        options: { store: new MemoryStore(), logger: quietLogger, limit: 100 },
        groupOptions: { windowMs: '1m', limit: 5 },
        routes: [
          { method: 'GET', path: '/daily', options: { window: { every: 'day' }, limit: 2 } },
          { method: 'GET', path: '/minute' },
        ],
      });
      const daily: [number, string | null][] = [];
      for (let i = 0; i < 3; i++) daily.push(await getLimit(agent, app.port, '/daily'));
      expect(daily).toEqual([
        [200, '2'],
        [200, '2'],
        [429, '2'],
      ]);
      const minute: [number, string | null][] = [];
      for (let i = 0; i < 6; i++) minute.push(await getLimit(agent, app.port, '/minute'));
      expect(minute.map(([status]) => status)).toEqual([200, 200, 200, 200, 200, 429]);
      expect(new Set(minute.map(([, limit]) => limit))).toEqual(new Set(['5']));
    });
  });
}
