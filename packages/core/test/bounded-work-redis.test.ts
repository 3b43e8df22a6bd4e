// Bounded work per decision on a real redis-server and in memory: sliding-window-log's largest request writes at most its capped limit.
import { createLimiter, MemoryStore, RedisStore } from '@floodgate/core';
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';

let server: RedisServer;
let client: Redis;
const measurements: string[] = [];

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
  await client.ping();
});

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
  if (process.env.FLOODGATE_PRINT_MEASUREMENTS) console.log(measurements.join('\n'));
});

const MAX = 10_000;

it('sliding-window-log on Redis: a cost of 1,000,000 writes nothing, the largest admitted cost writes one member per unit and no more', async () => {
  const prefix = `bw${Math.random().toString(36).slice(2, 8)}`;
  const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 10_000 }), prefix, algorithm: 'sliding-window-log', limit: MAX, windowMs: '1m' });
  // Script load and compile first, so the times below are the algorithm's own (SLOWLOG: Redis time).
  await limiter.peek('warm-up');
  await client.config('SET', 'slowlog-log-slower-than', '0');
  const scriptUs = async () => {
    const log = (await client.slowlog('GET', 20)) as [number, number, number, string[]][];
    await client.slowlog('RESET');
    return log.filter((e) => /^eval/i.test(e[3][0])).map((e) => e[2]);
  };
  await client.slowlog('RESET');
  const refused = await limiter.consume('s', { cost: 1_000_000 });
  expect(refused).toMatchObject({ allowed: false, reason: 'cost-exceeds-limit', retryAfterMs: -1 });
  expect(await client.keys(`${prefix}:*`)).toEqual([]);
  const refusedUs = await scriptUs();
  expect((await limiter.consume('s', { cost: MAX })).allowed).toBe(true);
  const [key] = await client.keys(`${prefix}:*`);
  // One member per unit, plus the '#<seq>' member that names the next ones.
  expect(await client.zcard(key)).toBe(MAX + 1);
  expect(await client.pttl(key)).toBeGreaterThan(0);
  const maxUs = await scriptUs();
  const bytes = Number(await client.call('MEMORY', 'USAGE', key));
  measurements.push(`sliding-window-log on Redis: cost 1e6 (refused) ${refusedUs.join(',')} us of Redis time; cost ${MAX} (admitted) ${maxUs.join(',')} us, key ${bytes} bytes`);
  await client.config('SET', 'slowlog-log-slower-than', '10000');
});

it('sliding-window-log in memory: the largest admitted cost holds one entry per unit and no more', async () => {
  const store = new MemoryStore();
  const limiter = createLimiter({ store, algorithm: 'sliding-window-log', limit: MAX, windowMs: '1m' });
  expect((await limiter.consume('s', { cost: 1_000_000 })).reason).toBe('cost-exceeds-limit');
  expect((await limiter.consume('s', { cost: MAX })).allowed).toBe(true);
  expect((await limiter.consume('s')).allowed).toBe(false);
});
