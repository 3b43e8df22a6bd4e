// What a limiter allocates before it needs it: its fallback store and its block cache are made at first use, so an app's many route limiters cost little.
import { createLimiter, MemoryStore, RedisStore } from '../src';
import { startRedis, type RedisServer } from '@floodgate/testing';

/** Heap plus array buffers: lru-cache preallocates both kinds (arrays of slots, typed-array links). */
const used = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

describe('a limiter before its first local decision or denial', () => {
  it('holds neither a fallback MemoryStore nor a block-cache LRU: 100 limiters grow the heap by far less than one preallocated LRU each', () => {
    const shared = new MemoryStore();
    const limiters = [];
    const before = used();
    for (let i = 0; i < 100; i++) limiters.push(createLimiter({ store: shared, limit: 10, windowMs: 60_000, prefix: `fp${i}` }));
    const grown = used() - before;
    // Eagerly made, each limiter's fallback store preallocated 100,000 LRU slots and its block
    // cache 10,000: 100 limiters grew this figure by 294 MB, and by 21 MB with only the block cache
    // eager. Lazily, about 1 MB (the bench: ~5 KB a limiter); 8 MB leaves room for whatever
    // garbage their construction left uncollected, and fails if either is made eagerly again.
    expect(limiters).toHaveLength(100);
    expect(grown).toBeLessThan(8 * 1024 * 1024);
  });

  it('still decides: a denial blocks from the cache it makes then, and reset() before any local decision is a no-op', async () => {
    const limiter = createLimiter({ store: new MemoryStore(), limit: 1, windowMs: 60_000 });
    await limiter.reset('nobody');
    expect((await limiter.consume('a')).allowed).toBe(true);
    const denied = await limiter.consume('a');
    expect([denied.allowed, denied.reason]).toEqual([false, 'limited']);
    expect((await limiter.consume('a')).reason).toBe('blocked');
    await limiter.reset('a');
    expect((await limiter.consume('a')).allowed).toBe(true);
  });
});

describe('the fallback made at the first local decision', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it('decides locally with this instance\'s share once Redis is gone, then keeps counting there', async () => {
    const client = redis.client({ autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {});
    // A deadline no busy machine misses (the default 100 ms is not what this checks): the first
    // answer comes from Redis; once the client is closed, each call fails at once, not at a deadline.
    const limiter = createLimiter({ store: new RedisStore({ client, timeoutMs: 30_000 }), limit: 2, windowMs: 60_000, instances: 1, prefix: `fp-${Date.now()}` });
    expect((await limiter.consume('x')).reason).toBe('allowed');
    client.disconnect();
    const local = [await limiter.consume('y'), await limiter.consume('y'), await limiter.consume('y')];
    expect(local.map((d) => [d.allowed, d.reason])).toEqual([
      [true, 'fail-local'],
      [true, 'fail-local'],
      [false, 'fail-local'],
    ]);
  });
});
