// gcra's stored TAT on a real Redis: the '<ms>:<fraction>' form it writes, and the whole-microsecond form earlier versions wrote, still read.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, RedisStore } from '../src';

const T = 1_800_000_000_000;
let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedis();
  client = server.client();
});
afterAll(async () => {
  client.disconnect();
  await server.stop();
});

function limiter(prefix: string) {
  const store = new RedisStore({ client, timeoutMs: 30_000, UNSAFE_testClock: () => T });
  return createLimiter({ store, prefix, algorithm: 'gcra', burst: 5, refillPerSecond: 1, blockCacheSize: 0 });
}

it("writes the TAT as whole ms and a fraction of a ms: '<ms>:<fraction>'", async () => {
  const l = createLimiter({ store: new RedisStore({ client, timeoutMs: 30_000, UNSAFE_testClock: () => T }), prefix: 'frac', algorithm: 'gcra', burst: 3, refillPerSecond: 3 });
  await l.consume('s');
  const [key] = await client.keys('frac:*');
  // One emission interval at 3/s: 333.333... ms ahead of T.
  const [ms, fraction] = (await client.get(key))!.split(':');
  expect(Number(ms)).toBe(T + 333);
  // The fraction of the double 1000 / 3, exactly (17 digits survive the round trip).
  expect(Number(fraction)).toBe(1000 / 3 - 333);
});

it('reads a TAT left in whole microseconds by an earlier version, fraction included', async () => {
  const l = limiter('legacy');
  await l.consume('s');
  const [key] = await client.keys('legacy:*');
  // 2.5005 s ahead: 2.5005 of the 5 units spent.
  await client.set(key, String((T + 2_500) * 1000 + 500), 'PX', 60_000);
  expect(await l.peek('s', { cost: 0 })).toMatchObject({ allowed: true, remaining: 2, resetMs: 2501 });
  expect(await l.consume('s', { cost: 2 })).toMatchObject({ allowed: true, remaining: 0, resetMs: 4501 });
  expect(await l.consume('s')).toMatchObject({ allowed: false, retryAfterMs: 501 });
  expect(await client.get(key)).toBe(`${T + 4_500}:0.5`);
});
