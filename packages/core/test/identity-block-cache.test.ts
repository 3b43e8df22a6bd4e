// The block cache identity relies on: a denied subject is answered locally until T, by consume and by blocked().
import { createLimiter } from '../src/engine/limiter';
import { MemoryStore } from '../src/stores/memory-store';
import type { Store, StoreRequest } from '../src/stores/store';

function setup(blockCacheSize?: number) {
  let now = 1_200_000; // a multiple of the window: the window starts with the test
  const clock = () => now;
  const memory = new MemoryStore({ clock });
  let calls = 0;
  // Counts calls and passes them on to a real MemoryStore.
  const store: Store = {
    name: 'counting-memory',
    evaluate: (request: StoreRequest) => (calls++, memory.evaluate(request)),
    reset: (keys) => memory.reset(keys),
  };
  const limiter = createLimiter({ store, clock, blockCacheSize, algorithm: 'fixed-window', limit: 2, windowMs: 60_000, logger: { warn() {}, error() {} } });
  return { limiter, calls: () => calls, advance: (ms: number) => (now += ms) };
}

describe('block cache', () => {
  it('answers a denied subject without the store until its retry time, then asks the store again', async () => {
    const { limiter, calls, advance } = setup();
    await limiter.consume('s', { scope: 'GET /r' });
    await limiter.consume('s', { scope: 'GET /r' });
    const denied = await limiter.consume('s', { scope: 'GET /r' });
    expect(denied).toMatchObject({ allowed: false, reason: 'limited', retryAfterMs: 60_000 });
    expect(calls()).toBe(3);
    for (let i = 0; i < 1_000; i++) expect((await limiter.consume('s', { scope: 'GET /r' })).reason).toBe('blocked');
    advance(59_999);
    expect((await limiter.consume('s', { scope: 'GET /r' })).reason).toBe('blocked');
    expect(calls()).toBe(3);
    // Another scope or subject is another bucket.
    expect((await limiter.consume('s', { scope: 'GET /other' })).allowed).toBe(true);
    expect((await limiter.consume('t', { scope: 'GET /r' })).allowed).toBe(true);
    advance(1);
    expect(await limiter.consume('s', { scope: 'GET /r' })).toMatchObject({ allowed: true, reason: 'allowed' });
    expect(calls()).toBe(6);
  });

  it('counts the blocked answer down: retry and reset times shrink as time passes', async () => {
    const { limiter, advance } = setup();
    for (let i = 0; i < 3; i++) await limiter.consume('s');
    advance(20_000);
    const d = await limiter.consume('s');
    expect(d).toMatchObject({ reason: 'blocked', retryAfterMs: 40_000, resetMs: 40_000 });
    expect(d.limits[0]).toMatchObject({ retryAfterMs: 40_000, resetMs: 40_000 });
  });

  it('blocked() says synchronously what consume would answer from the cache, without the store', async () => {
    const { limiter, calls, advance } = setup();
    expect(limiter.blocked('s')).toBeUndefined();
    for (let i = 0; i < 3; i++) await limiter.consume('s', { cost: 1 });
    const before = calls();
    advance(1_000);
    const local = limiter.blocked('s');
    expect(local).toEqual(await limiter.consume('s'));
    expect(local).toMatchObject({ allowed: false, reason: 'blocked', retryAfterMs: 59_000 });
    expect(calls()).toBe(before);
    // Cost 0 was not what was denied; a cost above every limit never reads the cache; nor does a bad cost.
    expect(limiter.blocked('s', { cost: 0 })).toBeUndefined();
    expect(limiter.blocked('s', { cost: 3 })).toBeUndefined();
    expect(limiter.blocked('s', { cost: -1 })).toBeUndefined();
    expect(limiter.blocked('s', { scope: 'elsewhere' })).toBeUndefined();
    advance(59_000);
    expect(limiter.blocked('s')).toBeUndefined();
  });

  it('is off with blockCacheSize: 0: every request goes to the store', async () => {
    const { limiter, calls } = setup(0);
    for (let i = 0; i < 10; i++) await limiter.consume('s');
    expect(calls()).toBe(10);
    expect(limiter.blocked('s')).toBeUndefined();
  });
});
