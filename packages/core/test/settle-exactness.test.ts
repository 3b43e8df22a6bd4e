// Reserve-then-settle exactness: 200 concurrent requests each reserving 10 and settling a random actual cost leave exactly the sum of the actual costs charged; every algorithm, on memory, Redis and a Redis Cluster. And a double settle, raced, counts once.
import { prng } from '@floodgate/testing';
import { ALGORITHMS, createLimiter, MemoryStore, RedisStore, type AlgorithmName, type Store } from '../src';
import { serverAndCluster } from './support/redis-clients';

const N = 200;
const RESERVED = 10;
const LIMIT = 10_000;

const run = Math.random().toString(36).slice(2, 8);
const figures: Record<string, unknown>[] = [];
const redis = serverAndCluster(() => console.log(`settle exactness (N ${N} requests, each reserving ${RESERVED}):\n${figures.map((f) => JSON.stringify(f)).join('\n')}`));

/** A limiter of LIMIT units on which nothing comes back by time during the test (a window of a year, or one token back per 1000 s). */
function limiterOn(store: Store, storeName: string, algorithm: AlgorithmName, tag: string) {
  const tokens = algorithm === 'token-bucket' || algorithm === 'gcra';
  return createLimiter({
    store,
    prefix: `sx-${run}-${storeName}-${tag}`,
    algorithm,
    ...(tokens ? { burst: LIMIT, refillPerSecond: 1 / 1000 } : { limit: LIMIT, windowMs: '365d' }),
    blockCacheSize: 0,
    failMode: 'closed',
    settle: { maxCost: 40 },
  });
}

const STORES: readonly [string, () => Store][] = [
  ['memory', () => new MemoryStore()],
  ['redis', () => new RedisStore({ client: redis.client, timeoutMs: 5_000 })],
  ['cluster', () => new RedisStore({ client: redis.clusterClient, timeoutMs: 5_000 })],
];

describe.each(STORES)('on %s', (storeName, makeStore) => {
  it.each(ALGORITHMS.map((a) => [a]))(`%s: ${N} concurrent requests reserving ${RESERVED} and settling a random actual cost (0..30) leave exactly the sum of the actual costs charged`, async (algorithm) => {
    const l = limiterOn(makeStore(), storeName, algorithm, 'sum');
    const rnd = prng(29);
    const actual = Array.from({ length: N }, () => rnd.int(0, 30));
    const delays = Array.from({ length: N }, () => rnd.int(0, 20));
    // Reserves and settles interleave: some settle while others are still reserving.
    const outcomes = await Promise.all(
      actual.map(async (cost, i) => {
        const r = await l.reserve(algorithm, { cost: RESERVED });
        expect(r.decision).toMatchObject({ allowed: true, degraded: false });
        if (delays[i] > 0) await new Promise((resolve) => setTimeout(resolve, delays[i]));
        return (await r.settle(cost)).outcome;
      }),
    );
    const sum = actual.reduce((a, b) => a + b, 0);
    const left = await l.peek(algorithm, { cost: 0 });
    const result = { store: storeName, algorithm, sumOfActual: sum, charged: LIMIT - left.remaining!, settled: outcomes.filter((o) => o === 'settled').length };
    figures.push(result);
    // The draw is not all estimates: some settles give back, some charge more.
    expect(actual.some((c) => c < RESERVED) && actual.some((c) => c > RESERVED)).toBe(true);
    expect(result).toEqual({ store: storeName, algorithm, sumOfActual: sum, charged: sum, settled: N });
  });

  it.each(ALGORITHMS.map((a) => [a]))('%s: the same reservation settled 20 times at once counts once', async (algorithm) => {
    const l = limiterOn(makeStore(), storeName, algorithm, 'twice');
    const r = await l.reserve(algorithm, { cost: RESERVED });
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => r.settle(35)));
    expect(outcomes.filter((o) => o.outcome === 'settled').length).toBe(1);
    expect(outcomes.filter((o) => o.outcome === 'already-settled').length).toBe(19);
    const left = await l.peek(algorithm, { cost: 0 });
    expect(LIMIT - left.remaining!).toBe(35);
  });
});
