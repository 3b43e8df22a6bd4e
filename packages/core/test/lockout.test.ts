// Progressive lock-out across two limiter instances on one store (memory, and a real Redis): a caller refused again and again waits 1x, 2x, 4x... the base, capped, and both instances say the same.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, FloodgateError, formatHeaders, MemoryStore, problemDetails, RedisStore, type Decision, type Limiter, type Store } from '../src';
import { FakeClock } from './conformance/fake-clock';

let server: RedisServer;
let client: Redis;
const run = Math.random().toString(36).slice(2, 8);
const printed: string[] = [];

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
}, 30_000);

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
  console.log(`lock-out Retry-After (s), after 3, base 1m, max 1h:\n${printed.join('\n')}`);
});

const retryAfter = (d: Decision) => Number(formatHeaders(d, ['draft-6']).find(([name]) => name === 'Retry-After')?.[1]);

/**
 * An attacker alternating between two instances: every refusal is answered with Retry-After, and
 * the attacker comes back exactly then and keeps trying until refused again. The limits' own waits
 * are a second at most (a burst of 1 refilled at 1/s), so every wait past that is the lock-out's.
 */
async function attack(store: Store, clock: FakeClock, name: string): Promise<number[]> {
  const options = {
    store,
    prefix: `lock-${run}-${name}`,
    algorithm: 'token-bucket' as const,
    burst: 1,
    refillPerSecond: 1,
    lockout: { after: 3, baseMs: '1m', maxMs: '1h' } as const,
    clock: clock.now, // the block cache ages on the same fake clock
    failMode: 'closed' as const,
  };
  const instances: Limiter[] = [createLimiter(options), createLimiter(options)];
  const waits: number[] = [];
  let n = 0;
  while (waits.length < 11) {
    const d = await instances[n++ % 2].consume('victim@example.com');
    expect(d.degraded).toBe(false);
    if (d.allowed) continue;
    const seconds = retryAfter(d);
    waits.push(seconds);
    if (d.reason === 'locked') {
      // The other instance, asked at once, sees the same lock from the store.
      const other = await instances[n % 2].consume('victim@example.com');
      expect({ reason: other.reason, retryAfter: retryAfter(other) }).toEqual({ reason: 'locked', retryAfter: seconds });
      // And the one that was refused answers from its block cache, still 'locked'.
      const again = await instances[(n - 1) % 2].consume('victim@example.com');
      expect({ reason: again.reason, retryAfter: retryAfter(again) }).toEqual({ reason: 'locked', retryAfter: seconds });
      expect(problemDetails(d, 1, seconds).detail).toMatch(/locked out/);
    }
    clock.advance(d.retryAfterMs);
  }
  // reset forgets the lock on every instance's next store call.
  await instances[0].reset('victim@example.com');
  expect((await instances[1].consume('victim@example.com')).allowed).toBe(true);
  printed.push(`${name}: ${JSON.stringify(waits)}`);
  return waits;
}

const EXPECTED = [1, 1, 60, 120, 240, 480, 960, 1920, 3600, 3600, 3600];

it('on memory: 1 s, 1 s (the limit), then 60, 120, 240, ... capped at 3600, the same on both instances', async () => {
  const clock = new FakeClock();
  expect(await attack(new MemoryStore({ clock: clock.now }), clock, 'memory')).toEqual(EXPECTED);
});

it('on Redis: the same sequence, decided in the script, the same on both instances', async () => {
  const clock = new FakeClock();
  const store = new RedisStore({ client, timeoutMs: 5_000, UNSAFE_testClock: clock.now });
  expect(await attack(store, clock, 'redis')).toEqual(EXPECTED);
  // The lock key was written with its TTL, beside the bucket, under the subject's hash tag.
  const keys = await client.keys(`lock-${run}-redis:*`);
  expect(keys.length).toBeGreaterThan(0);
  for (const key of keys) expect({ key, ttl: (await client.pttl(key)) > 0 }).toEqual({ key, ttl: true });
});

it('lockout options are validated once, with the option named', () => {
  const code = (fn: () => unknown) => {
    try {
      fn();
    } catch (error) {
      return [(error as FloodgateError).code, (error as FloodgateError).option];
    }
    return undefined;
  };
  expect(code(() => createLimiter({ limit: 5, lockout: { after: 0 } }))).toEqual(['FG_INVALID_OPTION', 'lockout.after']);
  expect(code(() => createLimiter({ limit: 5, lockout: { baseMs: '1h', maxMs: '1m' } }))).toEqual(['FG_INVALID_OPTION', 'lockout.maxMs']);
  expect(code(() => createLimiter({ limit: 5, lockout: { forgetMs: 'soon' as never } }))).toEqual(['FG_INVALID_OPTION', 'lockout.forgetMs']);
  expect(code(() => createLimiter({ limit: 5, lockout: { afterr: 3 } as never }))).toEqual(['FG_UNKNOWN_OPTION', 'afterr']);
  expect(code(() => createLimiter({ limit: 5, lockout: 3 as never }))).toEqual(['FG_INVALID_OPTION', 'lockout']);
  expect(createLimiter({ limit: 5, lockout: {} }).options.lockout).toEqual({ after: 3, baseMs: 60_000, maxMs: 3_600_000, forgetMs: 86_400_000 });
  expect(createLimiter({ limit: 5 }).options.lockout).toBeUndefined();
});
