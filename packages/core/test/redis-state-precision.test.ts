// The scripts hand numbers to redis.call as numbers, and Redis writes them with 17 significant digits
// (what string.format('%.17g') gave before): a stored double reads back as the very double the twin holds.
import { createLimiter, RedisStore } from '../src';
import { serverWithClient } from './support/redis-clients';

const T = 1_800_000_000_000;
const redis = serverWithClient();
let now = T;

it('token-bucket: a fraction of a token needing 17 digits is stored and read back exactly', async () => {
  now = T;
  const limiter = createLimiter({
    store: new RedisStore({ client: redis.client, timeoutMs: 30_000, UNSAFE_testClock: () => now }),
    prefix: 'prec',
    algorithm: 'token-bucket',
    burst: 3,
    refillPerSecond: 1 / 3,
    blockCacheSize: 0,
  });
  await limiter.consume('s', { cost: 2 });
  now = T + 1;
  await limiter.consume('s');
  const [key] = await redis.client.keys('prec:*');
  // The twin's arithmetic: 1 token left, refilled for 1 ms at 1/3 per second, less 1.
  const expected = Math.min(3, 1 + (1 * (1 / 3)) / 1000) - 1;
  const stored = await redis.client.hget(key, 't');
  expect(stored).toMatch(/^\d\.\d{15,}/);
  expect(Number(stored)).toBe(expected);
  expect(await redis.client.hget(key, 'ts')).toBe(String(T + 1));
  // And the next decision continues from exactly that, another ms later (the twin's steps again).
  now = T + 2;
  const tokens = Math.min(3, expected + (1 * (1 / 3)) / 1000);
  expect(await limiter.peek('s', { cost: 0 })).toMatchObject({ allowed: true, remaining: 0, resetMs: Math.ceil(((3 - tokens) * 1000) / (1 / 3)) });
});
