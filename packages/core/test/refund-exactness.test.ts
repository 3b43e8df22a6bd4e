// Refund exactness: N concurrent attempts, each charged before its "handler" and refunded when it succeeds, leave exactly the failures charged; every algorithm, on memory, Redis and a Redis Cluster.
import { prng } from '@floodgate/testing';
import { ALGORITHMS, createLimiter, MemoryStore, RedisStore, type AlgorithmName, type Store } from '../src';
import { serverAndCluster } from './support/redis-clients';

const N = 200;
const K = 37;

const run = Math.random().toString(36).slice(2, 8);
const figures: Record<string, unknown>[] = [];
const redis = serverAndCluster(() => console.log(`refund exactness (N ${N} attempts, K ${K} fail):\n${figures.map((f) => JSON.stringify(f)).join('\n')}`));

/**
 * `attempts` at once on one subject, limit `limit` (a window of a year, or a burst refilled once an
 * hour: nothing comes back by time during the test). Each attempt is charged; the ones drawn as
 * failures keep their charge, the others are refunded at once, while the rest are still being
 * charged. What the store then holds must be exactly the admitted failures.
 */
async function attempt(store: Store, storeName: string, algorithm: AlgorithmName, limit: number, seed: number, spreadMs = 0) {
  const tokens = algorithm === 'token-bucket' || algorithm === 'gcra';
  const l = createLimiter({
    store,
    prefix: `rx-${run}-${storeName}-${limit}`,
    algorithm,
    ...(tokens ? { burst: limit, refillPerSecond: 1 / 3600 } : { limit, windowMs: '365d' }),
    blockCacheSize: 0,
    failMode: 'closed',
  });
  const rnd = prng(seed);
  const fails = new Set<number>();
  while (fails.size < K) fails.add(rnd.int(0, N - 1));
  const delays = Array.from({ length: N }, () => rnd.int(0, spreadMs));
  const outcomes = await Promise.all(
    Array.from({ length: N }, async (_, i) => {
      if (delays[i] > 0) await new Promise((resolve) => setTimeout(resolve, delays[i]));
      const d = await l.consume(algorithm);
      expect(d.degraded).toBe(false);
      if (!d.allowed) return 'denied';
      if (fails.has(i)) return 'failed';
      return (await l.refund(algorithm, { at: d.at! })) ? 'refunded' : 'refund-failed';
    }),
  );
  const count = (o: string) => outcomes.filter((x) => x === o).length;
  const left = await l.peek(algorithm, { cost: 0 });
  const result = { store: storeName, algorithm, limit, admitted: N - count('denied'), failed: count('failed'), refunded: count('refunded'), charged: limit - left.remaining! };
  figures.push(result);
  return result;
}

const STORES: readonly [string, () => Store][] = [
  ['memory', () => new MemoryStore()],
  ['redis', () => new RedisStore({ client: redis.client, timeoutMs: 5_000 })],
  ['cluster', () => new RedisStore({ client: redis.clusterClient, timeoutMs: 5_000 })],
];

describe.each(STORES)('on %s', (storeName, makeStore) => {
  it.each(ALGORITHMS.map((a) => [a]))(`%s: ${N} concurrent attempts of which ${K} fail leave exactly ${K} units charged`, async (algorithm) => {
    const r = await attempt(makeStore(), storeName, algorithm, N, 7);
    expect(r).toEqual({ store: storeName, algorithm, limit: N, admitted: N, failed: K, refunded: N - K, charged: K });
  });

  it.each(ALGORITHMS.map((a) => [a]))(`%s: under contention (limit 50, ${N} attempts spread over 30 ms), what stays charged is exactly the admitted failures`, async (algorithm) => {
    const r = await attempt(makeStore(), storeName, algorithm, 50, 11, 30);
    // Attempts arrive while earlier ones are refunded: some are denied, some admitted into room a
    // refund just made. Whatever the interleaving, exactly the admitted failures stay charged.
    expect(r.admitted).toBeGreaterThanOrEqual(50);
    expect(r.admitted).toBeLessThanOrEqual(N);
    expect({ refunded: r.refunded, charged: r.charged }).toEqual({ refunded: r.admitted - r.failed, charged: r.failed });
  });
});
