// Coalescing in RedisStore: requests for one subject sent together in one script call decide exactly as if sent one by one.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { ALGORITHMS, createLimiter, RedisStore, subjectKey, type Decision } from '../src';

let server: RedisServer;
let client: Redis;
const rnd = () => `co-${Math.random().toString(36).slice(2, 10)}`;
const quiet = { warn: () => {}, error: () => {} };

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
});
afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

async function burst(coalesce: boolean, algorithm: (typeof ALGORITHMS)[number], n: number, costs: (i: number) => number) {
  const limiter = createLimiter({
    store: new RedisStore({ client, coalesce, timeoutMs: 10_000 }),
    prefix: rnd(),
    algorithm,
    limit: 50,
    windowMs: '1h',
    refillPerSecond: algorithm === 'token-bucket' || algorithm === 'gcra' ? 1 / 3600 : undefined,
    blockCacheSize: 0,
    logger: quiet,
  });
  await server.resetStats();
  const decisions = await Promise.all(Array.from({ length: n }, (_, i) => limiter.consume('hot', { cost: costs(i) })));
  const stats = await server.commandStats();
  return { decisions, scripts: (stats.evalsha ?? 0) + (stats.eval ?? 0) };
}

const summary = (ds: Decision[]) => ds.map((d) => `${d.allowed ? 'A' : 'D'}${d.remaining}`);

describe.each(ALGORITHMS)('%s', (algorithm) => {
  it('200 concurrent requests on one subject: exactly the limit admitted, in far fewer script calls, each with its own figures', async () => {
    const { decisions, scripts } = await burst(true, algorithm, 200, () => 1);
    const admitted = decisions.filter((d) => d.allowed);
    expect(admitted).toHaveLength(50);
    expect(decisions.every((d) => d.reason === 'allowed' || d.reason === 'limited')).toBe(true);
    // Each admitted request saw the one before it: remaining counts down 49..0 in arrival order.
    expect(admitted.map((d) => d.remaining)).toEqual(Array.from({ length: 50 }, (_, i) => 49 - i));
    expect(scripts).toBeLessThan(20);
  });

  it('mixed costs: the coalesced answers equal the one-by-one answers, request for request', async () => {
    const costs = (i: number) => [1, 3, 0, 7, 2, 5][i % 6];
    const together = await burst(true, algorithm, 60, costs);
    const apart = await burst(false, algorithm, 60, costs);
    expect(apart.scripts).toBe(60);
    expect(together.scripts).toBeLessThan(60);
    expect(summary(together.decisions)).toEqual(summary(apart.decisions));
  });
});

it('requests queued behind a call to a hung Redis are failed at once, never sent, and nothing counts twice', async () => {
  const prefix = rnd();
  const limiter = createLimiter({
    store: new RedisStore({ client, timeoutMs: 150, coalesce: true }),
    prefix,
    algorithm: 'fixed-window',
    limit: 1_000,
    windowMs: '10m',
    logger: quiet,
  });
  expect((await limiter.consume('victim')).reason).toBe('allowed');
  await server.resetStats();
  server.pause();
  let decisions: Decision[];
  const t0 = performance.now();
  try {
    decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('victim')));
  } finally {
    server.resume();
  }
  const waited = performance.now() - t0;
  expect(decisions.every((d) => d.reason === 'fail-open')).toBe(true);
  expect(waited).toBeLessThan(5_000); // bounded by the timeout, not by the queue (loose: a loaded machine)
  const stats = await server.commandStats();
  expect(stats.evalsha).toBe(1); // only the call in flight reached Redis
  const [count] = await client.hmget(`${subjectKey(prefix, '', 'victim')}:default.fw`, 'c');
  expect(Number(count)).toBe(2); // the first request and the one that ran after the resume
});
