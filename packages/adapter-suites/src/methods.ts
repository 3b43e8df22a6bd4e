// The method suite every adapter runs: a client that changes the HTTP method on an all-method route buys no budget and mints no state.
import { Agent, METHODS, request as httpRequest } from 'node:http';
import { MemoryStore, type HttpRateLimitOptions, type RateLimitEvent } from '@floodgate/core';
import { bucketClaimsHeld } from '@floodgate/core/internal';
import type { AdapterHarness, Mounting, RouteSpec, RunningApp } from './harness';
import { count, exactly, quietLogger } from './requests';

const LIMIT = 2;
/** The methods every framework routes to an all-method route, rotated: HEAD counts as GET anyway. */
const ROTATED = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];
/** Tokens no registry names, which a runtime on the Fetch API lets through (only through `RunningApp.fetch`). */
const invented = (i: number) => (i % 3 === 0 ? 'FOO' : i % 3 === 1 ? 'XYZ123' : `M${i.toString(36).toUpperCase()}`);
/** Every method Node's parser lets through to the app (CONNECT is a tunnel, answered elsewhere). */
const NODE_METHODS = METHODS.filter((m) => m !== 'CONNECT');

/** One request; resolves with its status. */
function send(agent: Agent, port: number, method: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, method, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Sends each [method, path] in turn (one caller, one connection at a time: the order is the figure). */
async function sendEach(agent: Agent, port: number, requests: readonly (readonly [string, string])[]): Promise<number[]> {
  const statuses: number[] = [];
  for (const [method, path] of requests) statuses.push(await send(agent, port, method, path));
  return statuses;
}

/** Sends through the app's in-process fetch entry, `concurrency` at a time; statuses in order. */
async function fetchEach(app: RunningApp, port: number, methods: readonly string[], path: string, concurrency = 16): Promise<number[]> {
  const statuses: number[] = new Array(methods.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < methods.length) {
        const i = next++;
        const response = await app.fetch!(new Request(`http://127.0.0.1:${port}${path}`, { method: methods[i] }));
        await response.arrayBuffer();
        statuses[i] = response.status;
      }
    }),
  );
  return statuses;
}

/**
 * Runs the method suite against `h`: at limit 2, an all-method route is one bucket whatever the
 * method (over HTTP for every adapter; with invented tokens too where `RunningApp.fetch` lets them
 * through), a route of one method keeps its bucket per method, and the scopes and bucket claims a
 * limiter keeps stay bounded however many methods arrive. Prints each figure (`methods | framework | ...`).
 */
export function runMethodSuite(h: AdapterHarness): void {
  describe(`method rotation through ${h.name}`, () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const apps: RunningApp[] = [];
    afterAll(async () => {
      agent.destroy();
      await Promise.all(apps.map((a) => a.close()));
    });
    const report = (what: string, figure: string) => console.log(`methods | ${h.name} | ${what}: ${figure}`);

    /** An app on its own memory store, exactly LIMIT per caller; the scope of every decision is collected. */
    async function start(routes: RouteSpec[], mounting: Mounting = 'app-level') {
      const store = new MemoryStore();
      const scopes = new Set<string>();
      const onDecision = (event: RateLimitEvent<unknown>) => void scopes.add(event.scope);
      const options: HttpRateLimitOptions<any> = { store, logger: quietLogger, ...exactly(LIMIT), onDecision };
      const app = await h.start({ options, routes, mounting });
      apps.push(app);
      return { app, store, scopes };
    }

    for (const mounting of h.mountings) {
      it(`${mounting}: 102 requests rotating the method on an all-method route admit ${LIMIT}, in one bucket`, async () => {
        const { app, scopes } = await start([{ method: 'ALL', path: '/r' }], mounting);
        const requests = Array.from({ length: 102 }, (_, i) => [ROTATED[i % ROTATED.length], '/r'] as const);
        const statuses = await sendEach(agent, app.port, requests);
        report(`${mounting}, all-method route, ${ROTATED.join('/')}`, `${count(statuses, 200)} of 102 admitted (limit ${LIMIT})`);
        expect(count(statuses, 200)).toBe(LIMIT);
        expect(count(statuses, 429)).toBe(102 - LIMIT);
        expect([...scopes]).toEqual(['ALL /r']);
      });
    }

    it('a route of one method keeps a bucket per method: GET /r and POST /r each admit their own limit', async () => {
      const { app, scopes } = await start([
        { method: 'GET', path: '/r' },
        { method: 'POST', path: '/r' },
      ]);
      const statuses = await sendEach(agent, app.port, Array.from({ length: 20 }, (_, i) => [i % 2 ? 'POST' : 'GET', '/r'] as const));
      expect(count(statuses, 200)).toBe(2 * LIMIT);
      expect([...scopes].sort()).toEqual(['GET /r', 'POST /r']);
    });

    it("every method Node's parser lets through, on an all-method route and on no route, holds 2 scopes and 2 bucket claims", async () => {
      const { app, store, scopes } = await start([{ method: 'ALL', path: '/r' }]);
      const onRoute = await sendEach(agent, app.port, Array.from({ length: 102 }, (_, i) => [NODE_METHODS[i % NODE_METHODS.length], '/r'] as const));
      const elsewhere = await sendEach(agent, app.port, NODE_METHODS.map((m, i) => [m, `/nowhere/${i}`] as const));
      report(
        `all-method route, every method Node parses (${NODE_METHODS.length}) in turn, then each on a path no route matches`,
        `${count(onRoute, 200)} of 102 admitted (limit ${LIMIT}), scopes ${scopes.size}, bucket claims ${bucketClaimsHeld(store)}`,
      );
      // A framework may answer a method it does not route itself (Fastify: 404); whatever reaches the limiter is 2 buckets.
      expect(count(onRoute, 200)).toBeLessThanOrEqual(LIMIT);
      expect(count(elsewhere, 200)).toBe(0);
      expect([...scopes].every((s) => s === 'ALL /r' || s === '<unmatched>')).toBe(true);
      expect(bucketClaimsHeld(store)).toBeLessThanOrEqual(2);
    });

    // Behind Node's parser a token it does not know never reaches the app (the test above covers what does).
    if (!h.fetchEntry) return;
    // 20,000 distinct tokens: past the 10,000 scopes and claims a limiter keeps (core's http/scope.ts), so a scope or
    // claim per token would show here and so would a cap reached; 100,000 (the review's figure) proved no more, 5 times slower.
    it('invented method tokens through the fetch entry: 20,000 admit 2 and hold one scope and one bucket claim', async () => {
      const { app, store, scopes } = await start([{ method: 'ALL', path: '/r' }]);
      const first = await fetchEach(app, app.port, [...ROTATED, ...Array.from({ length: 95 }, (_, i) => invented(i))], '/r');
      report(`all-method route, ${ROTATED.join('/')} then invented tokens (FOO, XYZ123, ...), through fetch`, `${count(first, 200)} of 102 admitted (limit ${LIMIT})`);
      const flood = await fetchEach(app, app.port, Array.from({ length: 20_000 }, (_, i) => `T${i.toString(36).toUpperCase()}`), '/r');
      report('20,000 distinct invented tokens through fetch', `${count(flood, 200)} admitted, scopes ${scopes.size}, bucket claims ${bucketClaimsHeld(store)}`);
      expect(count(first, 200)).toBe(LIMIT);
      expect(count(flood, 200)).toBe(0);
      expect([...scopes]).toEqual(['ALL /r']);
      expect(bucketClaimsHeld(store)).toBe(1);
    }, 60_000);
  });
}
