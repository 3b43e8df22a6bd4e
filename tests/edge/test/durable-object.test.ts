// The Durable Object store on workerd (miniflare): the conformance table through the objects' stubs, and a Hono app where 8 clients x 400 concurrent requests for one subject admit exactly 100.
import { readFileSync } from 'node:fs';
import { Miniflare } from 'miniflare';
import { createLimiter, DurableObjectStore, type DurableObjectNamespaceLike } from '@floodgate/core';
import { describeConformance } from '../../../packages/core/test/conformance/scenarios';
import { DO_LIMITS, DO_TEST_ROUTES } from '../app/do-worker';
import { bundle } from './bundle';
import { dispatch } from './dispatch';

let mf: Miniflare;
let namespace: DurableObjectNamespaceLike;

beforeAll(async () => {
  mf = new Miniflare({
    modules: true,
    script: readFileSync(await bundle('do-worker.ts'), 'utf8'),
    compatibilityDate: '2025-07-01',
    durableObjects: { FLOODGATE: 'FloodgateDurableObject' },
    // The conformance table drives a fake clock: these objects honour a batch's test clock.
    bindings: { FLOODGATE_UNSAFE_TEST_CLOCK: 'true' },
  });
  // The real binding, reached from Node by an awaited dispatchFetch to the worker, which calls the
  // object's stub (do-worker.ts's DO_TEST_ROUTES); miniflare's own Node-side proxy of the binding makes
  // synchronous calls that lost a reply on a loaded machine and failed every later scenario.
  namespace = {
    idFromName: (name) => name,
    get: (name: never) => ({
      fetch: (_url, init) => mf.dispatchFetch(`http://worker${DO_TEST_ROUTES.object}${encodeURIComponent(name)}`, { method: 'POST', body: init?.body, headers: init?.headers }),
    }),
  };
}, 60_000);

afterAll(async () => {
  await mf?.dispose();
});

// The Durable Object store keeps no overrides (docs/edge.md): every other scenario runs.
describeConformance('conformance: DurableObjectStore (workerd)', (clock) => new DurableObjectStore({ namespace, shards: 4, UNSAFE_testClock: clock, timeoutMs: 30_000 }), { overrides: false });

describe('a Hono app on workerd with the Durable Object store', () => {
  it('8 clients x 400 concurrent requests for one subject at a limit of 100 admit exactly 100', async () => {
    const counts = { admitted: 0, limited: 0, other: 0 };
    const client = async () => {
      for (let i = 0; i < 400; i++) {
        const res = await dispatch(mf, 'http://worker/race');
        await res.arrayBuffer();
        if (res.status === 200) counts.admitted++;
        else if (res.status === 429) counts.limited++;
        else counts.other++;
      }
    };
    await Promise.all(Array.from({ length: 8 }, client));
    expect(counts).toEqual({ admitted: DO_LIMITS.race, limited: 8 * 400 - DO_LIMITS.race, other: 0 });
  }, 120_000);

  it('answers 429 with RateLimit headers, one budget per client IP', async () => {
    const statuses = async (ip: string) => {
      const out: (number | string | null)[] = [];
      for (let i = 0; i <= DO_LIMITS.limited; i++) {
        const res = await mf.dispatchFetch('http://worker/limited', { headers: { 'cf-connecting-ip': ip } });
        await res.arrayBuffer();
        out.push(`${res.status}:${res.headers.get('ratelimit-remaining')}`);
      }
      return out;
    };
    expect(await statuses('198.51.100.7')).toEqual(['200:2', '200:1', '200:0', '429:0']);
    expect(await statuses('198.51.100.8')).toEqual(['200:2', '200:1', '200:0', '429:0']);
  });
});

describe('DurableObjectStore calls and failures', () => {
  it("sends the requests one invocation makes together for one shard in one call", async () => {
    const store = new DurableObjectStore({ namespace, shards: 1, timeoutMs: 30_000 });
    const limiter = createLimiter({ store, prefix: `do-batch-${Math.random().toString(36).slice(2, 8)}`, limit: 5, windowMs: '1m', failMode: 'closed' });
    const decisions = await Promise.all([limiter.consume('a'), limiter.consume('b'), limiter.consume('a')]);
    expect(decisions.map((d) => d.remaining)).toEqual([4, 4, 3]);
    expect(store.scriptStats).toEqual({ calls: 1, requests: 3 });
  });

  it('an object that cannot be reached takes the route\'s failure policy, as a Redis outage does', async () => {
    // The binding's stub failing as workerd fails an overloaded object's subrequest.
    const down: DurableObjectNamespaceLike = {
      idFromName: (name) => name,
      get: () => ({ fetch: () => Promise.reject(new Error('Durable Object is overloaded. Too many requests queued.')) }),
    };
    const store = new DurableObjectStore({ namespace: down });
    const closed = await createLimiter({ store, prefix: 'do-down-closed', limit: 5, windowMs: '1m', failMode: 'closed' }).consume('a');
    const open = await createLimiter({ store, prefix: 'do-down-open', limit: 5, windowMs: '1m', failMode: 'open' }).consume('a');
    expect([closed.allowed, closed.degraded, open.allowed, open.degraded]).toEqual([false, true, true, true]);
    expect(closed.reason).not.toBe('limited');
  });
});
