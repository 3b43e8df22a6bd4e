// RedisStore's call deadlines: one timer for a store's calls in flight (not one set and cleared per call), each call still failing at its own deadline.
import { startRedis, type RedisServer } from '@floodgate/testing';
import type { Redis } from 'ioredis';
import { createLimiter, RedisStore } from '../src';
import { DeadlineList, type Timed } from '../src/stores/redis/deadlines';

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedis();
  client = server.client({ autoResendUnfulfilledCommands: false });
  await client.ping();
}, 30_000);

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

describe('RedisStore deadlines', () => {
  it('sets no timer per script call: 40 calls one after another arm at most one deadline timer', async () => {
    // A deadline no other timer of this process uses, to count the store's own.
    const timeoutMs = 4321;
    const store = new RedisStore({ client, timeoutMs, coalesce: false });
    const limiter = createLimiter({ store, limit: 1000, windowMs: '1h', prefix: 'deadlines-one-timer', blockCacheSize: 0, instances: 1 });
    await limiter.consume('warm');
    const spy = jest.spyOn(global, 'setTimeout');
    try {
      for (let i = 0; i < 40; i++) expect((await limiter.consume('s')).allowed).toBe(true);
      const deadlineTimers = spy.mock.calls.filter(([, ms]) => typeof ms === 'number' && ms > 4000 && ms <= timeoutMs);
      expect(deadlineTimers.length).toBeLessThanOrEqual(1);
    } finally {
      spy.mockRestore();
    }
    expect(store.scriptStats.calls).toBe(41);
  });

  it('still fails each call at its own deadline while Redis is paused, and answers again after', async () => {
    const store = new RedisStore({ client, timeoutMs: 150, coalesce: false });
    const limiter = createLimiter({ store, limit: 1000, windowMs: '1h', prefix: 'deadlines-paused', blockCacheSize: 0, failMode: 'closed', instances: 1 });
    expect((await limiter.consume('a')).allowed).toBe(true);
    const pauser = server.client();
    await pauser.call('CLIENT', 'PAUSE', '1500', 'ALL');
    try {
      const answers = await Promise.all([limiter.consume('a'), limiter.consume('b'), limiter.consume('c')]);
      expect(answers.map((d) => d.reason)).toEqual(['fail-closed', 'fail-closed', 'fail-closed']);
      expect(limiter.health().stores[0]?.errors.timeout).toBe(3);
    } finally {
      await pauser.call('CLIENT', 'UNPAUSE');
      pauser.disconnect();
    }
  });
});

describe('DeadlineList', () => {
  const timed = (until: number, expired: number[]): Timed => ({
    until,
    prev: undefined,
    next: undefined,
    listed: false,
    expire() {
      expired.push(until);
    },
  });

  it('expires calls in deadline order whatever their order of arrival, and never one that left', async () => {
    const base = performance.now();
    const list = new DeadlineList();
    const expired: number[] = [];
    const late = timed(base + 60, expired);
    const early = timed(base + 20, expired);
    const gone = timed(base + 10, expired);
    const middle = timed(base + 40, expired);
    for (const call of [late, early, gone, middle]) list.add(call);
    list.remove(gone);
    expect(list.size).toBe(3);
    await new Promise<void>((resolve) => {
      const check = setInterval(() => {
        if (expired.length < 3) return;
        clearInterval(check);
        resolve();
      }, 5);
    });
    expect(expired).toEqual([base + 20, base + 40, base + 60]);
    expect(list.size).toBe(0);
  });
});
