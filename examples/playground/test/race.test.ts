// The race panel's engine against a real redis-server: the naive limiter over-admits, Floodgate admits exactly the limit.
import { createServer } from 'node:net';
import { startRedis, type RedisServer } from '@floodgate/testing';
import { createRace, redactRedisUrl, type Race } from '../src/race';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('race against a real Redis', () => {
  let redis: RedisServer;
  let race: Race;

  beforeAll(async () => {
    redis = await startRedis();
    race = createRace(redis.url);
  });
  afterAll(async () => {
    await race?.close();
    await redis?.stop();
  });

  it('naive get-then-incr admits more than the limit; Floodgate admits exactly the limit, one script call per request', async () => {
    await redis.resetStats();
    const result = await race.run({ requests: 200, limit: 20 });
    // Every request raced as its own script call (a NOSCRIPT reply is followed by an EVAL, not counted here).
    expect((await redis.commandStats()).evalsha).toBe(200);
    expect(result.naive.errors).toBe(0);
    expect(result.floodgate.errors).toBe(0);
    expect(result.naive.admitted + result.naive.denied).toBe(200);
    expect(result.naive.admitted).toBeGreaterThan(20);
    expect(result.floodgate.admitted).toBe(20);
    expect(result.floodgate.denied).toBe(180);
  });

  it('uses fresh keys each run, and every key it leaves has a TTL', async () => {
    const first = await race.run({ requests: 50, limit: 7 });
    const second = await race.run({ requests: 50, limit: 7 });
    expect(first.floodgate.admitted).toBe(7);
    expect(second.floodgate.admitted).toBe(7);
    const client = redis.client();
    try {
      const keys = await client.keys('fg-playground*');
      expect(keys.length).toBeGreaterThan(0);
      for (const key of keys) expect(await client.pttl(key)).toBeGreaterThan(0);
    } finally {
      client.disconnect();
    }
  });

  it('rejects bad input with a RangeError', async () => {
    await expect(race.run({ requests: 0, limit: 5 })).rejects.toThrow(RangeError);
    await expect(race.run({ requests: 10, limit: 1.5 })).rejects.toThrow(/limit must be a whole number/);
  });
});

describe('race without Redis', () => {
  it('is disabled without a URL and says how to enable it', async () => {
    const race = createRace(undefined);
    expect(race.enabled).toBe(false);
    await expect(race.run({ requests: 10, limit: 5 })).rejects.toThrow(/REDIS_URL=redis:\/\/127\.0\.0\.1/);
    await race.close();
  });

  it('reports an unreachable Redis as an error, not a hang', async () => {
    const port = await closedPort();
    const lines: string[] = [];
    const race = createRace(`redis://127.0.0.1:${port}`, (line) => lines.push(line));
    try {
      await expect(race.run({ requests: 10, limit: 5 })).rejects.toThrow(/not reachable/);
      expect(lines.join('\n')).toMatch(/ECONNREFUSED/);
    } finally {
      await race.close();
    }
  });

  it('never shows credentials from the URL', () => {
    expect(redactRedisUrl('redis://user:secret@127.0.0.1:6390/2')).toBe('redis://127.0.0.1:6390/2');
    expect(redactRedisUrl('not a url')).toBe('the configured REDIS_URL');
  });
});
