// Window-aligned state on a real redis-server: every write of a window would set the same expiry
// instant, so only the window's first write sends PEXPIRE; the key still always carries that expiry.
import { createLimiter, RedisStore } from '../src';
import { serverWithClient } from './support/redis-clients';

const redis = serverWithClient();
const quiet = { warn: () => {}, error: () => {} };

/** Redis's own clock, in ms. */
async function redisNow(): Promise<number> {
  const [s, us] = await redis.client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** The instant (Redis ms) the subject's one key expires, read with PTTL against TIME. */
async function expiryOf(prefix: string): Promise<number> {
  const keys = await redis.client.keys(`${prefix}:*`);
  expect(keys).toHaveLength(1);
  const [pttl, now] = await Promise.all([redis.client.pttl(keys[0]), redisNow()]);
  expect(pttl).toBeGreaterThan(0);
  return now + pttl;
}

describe.each([
  // The counter's state matters until its next window ends; the fixed window's until its own ends.
  { algorithm: 'sliding-window-counter' as const, windowsKept: 2 },
  { algorithm: 'fixed-window' as const, windowsKept: 1 },
])('$algorithm', ({ algorithm, windowsKept }) => {
  const limiterOf = (prefix: string, windowMs: number) =>
    createLimiter({ store: new RedisStore({ client: redis.client, coalesce: false, timeoutMs: 10_000 }), prefix, algorithm, limit: 1_000, windowMs, blockCacheSize: 0, logger: quiet,
      // A fixed count announces nothing: the only PEXPIREs counted are the scripts'.
      instances: 1 });

  it("within one window only the first write sets the expiry, and every write leaves the window's", async () => {
    // An hour or so, with a minute at least left of the window: no edge inside the test, which
    // would make a second PEXPIRE right.
    const before = await redisNow();
    let windowMs = 3_600_000;
    while (windowMs - (before % windowMs) < 60_000) windowMs += 120_000;
    const prefix = `wt${Math.random().toString(36).slice(2, 8)}`;
    const limiter = limiterOf(prefix, windowMs);
    await redis.server.resetStats();
    for (let i = 0; i < 5; i++) expect((await limiter.consume('s')).reason).toBe('allowed');
    const charged = await limiter.consume('s');
    expect(await limiter.refund('s', { at: charged.at! })).toBe(true);
    const stats = await redis.server.commandStats();
    expect({ hset: stats.hset, pexpire: stats.pexpire }).toEqual({ hset: 7, pexpire: 1 });
    const w = Math.floor((await redisNow()) / windowMs);
    // PTTL and TIME are two reads a few ms apart: the instant within them.
    expect(Math.abs((await expiryOf(prefix)) - (w + windowsKept) * windowMs)).toBeLessThan(50);
    // 5 charged (the sixth refunded); a peek answers as for one more.
    expect((await limiter.peek('s')).remaining).toBe(994);
  });

  it('the first write of the next window sets the expiry anew', async () => {
    const windowMs = 400;
    const prefix = `wt${Math.random().toString(36).slice(2, 8)}`;
    const limiter = limiterOf(prefix, windowMs);
    const startedIn = Math.floor((await redisNow()) / windowMs);
    await redis.server.resetStats();
    expect((await limiter.consume('s')).reason).toBe('allowed');
    const firstIn = Math.floor((await redisNow()) / windowMs);
    // Into a later window (by Redis's clock), then a second write.
    while (Math.floor((await redisNow()) / windowMs) <= firstIn) await new Promise((r) => setTimeout(r, 20));
    expect((await limiter.consume('s')).reason).toBe('allowed');
    const w = Math.floor((await redisNow()) / windowMs);
    expect(firstIn).toBeGreaterThanOrEqual(startedIn);
    expect((await redis.server.commandStats()).pexpire).toBe(2);
    const expires = await expiryOf(prefix);
    // Set by the write in window w (or w - 1 if TIME moved on between the write and this read).
    expect([w, w - 1].some((at) => Math.abs(expires - (at + windowsKept) * windowMs) < 50)).toBe(true);
  });
});

it('a calendar window sets its expiry on every write: a day and its month can start at the same instant', async () => {
  // 1 December 2026, 00:30 UTC: the day's period and the month's start together.
  const now = Date.UTC(2026, 11, 1, 0, 30);
  const prefix = `wc${Math.random().toString(36).slice(2, 8)}`;
  const store = new RedisStore({ client: redis.client, coalesce: false, timeoutMs: 10_000, UNSAFE_testClock: () => now });
  const quota = (every: 'day' | 'month') => createLimiter({ store, prefix, limit: 1_000, window: { every, timeZone: 'UTC' }, blockCacheSize: 0, logger: quiet, instances: 1 });
  // A daily quota, then the same quota made monthly (the same name, so the same key and stored start).
  expect((await quota('day').consume('s')).reason).toBe('allowed');
  expect((await quota('month').consume('s')).remaining).toBe(998);
  const keys = await redis.client.keys(`${prefix}:*`);
  expect(keys).toHaveLength(1);
  // The month's end, not the day's (23.5 hours on): the month's count lives as long as the month.
  expect(await redis.client.pttl(keys[0])).toBeGreaterThan(Date.UTC(2027, 0, 1) - now - 60_000);
});
