// A flood of other callers cannot evict a refused or locked-out caller's state from MemoryStore (issue #40 row 4): the protected share.
import { createLimiter, MemoryStore, type Limiter } from '../src';
import { FakeClock } from './conformance/fake-clock';

const HOUR = 3_600_000;

function recorder() {
  const lines: string[] = [];
  return { lines, logger: { warn: (m: string) => void lines.push(m), error: (m: string) => void lines.push(m) } };
}

/** A login route: 2 tries a minute, locked out for an hour at the first refusal; small LRU and block cache to keep the flood fast. */
function loginLimiter(store: MemoryStore, clock: FakeClock, logger = recorder().logger): Limiter {
  return createLimiter({
    store,
    prefix: 'login',
    limit: 2,
    windowMs: '1m',
    lockout: { after: 1, baseMs: '1h', maxMs: '1h' },
    blockCacheSize: 100,
    clock: clock.now,
    logger,
  });
}

/** `n` distinct IPv6 /64s (two /48s' worth past 65,536), each sending `each` requests; the number admitted. */
async function flood(limiter: Limiter, n: number, tag: string, each = 1): Promise<number> {
  let admitted = 0;
  for (let i = 0; i < n; i++) {
    const subject = `2001:db8:${tag}${i >> 16}:${(i & 0xffff).toString(16)}::/64`;
    for (let j = 0; j < each; j++) if ((await limiter.consume(subject)).allowed) admitted++;
  }
  return admitted;
}

async function lockOut(limiter: Limiter, subject: string): Promise<void> {
  expect((await limiter.consume(subject)).allowed).toBe(true);
  expect((await limiter.consume(subject)).allowed).toBe(true);
  const refused = await limiter.consume(subject);
  expect({ allowed: refused.allowed, reason: refused.reason, retryAfterMs: refused.retryAfterMs }).toEqual({ allowed: false, reason: 'locked', retryAfterMs: HOUR });
}

it('a caller locked out for an hour stays locked out through a flood of 1.5 x maxKeys other /64s, until the hour ends', async () => {
  const clock = new FakeClock();
  const store = new MemoryStore({ maxKeys: 1_000, clock: clock.now });
  const limiter = loginLimiter(store, clock);
  const victim = '2001:db8:aaaa:1::/64';
  await lockOut(limiter, victim);

  // 1,500 callers, one admitted request each: more than the LRU (1,000) holds; then 150 callers
  // that get themselves locked out too: more blocks than the block cache (100) holds.
  expect(await flood(limiter, 1_500, 'a')).toBe(1_500);
  expect(await flood(limiter, 150, 'e', 3)).toBe(300);
  // The block cache lost the victim's entry to the flood, so the next answer comes from the store:
  // the store's own hold is what keeps the lock-out.
  expect(limiter.blocked(victim)).toBeUndefined();
  const after = await limiter.consume(victim);
  expect({ allowed: after.allowed, reason: after.reason, retryAfterMs: after.retryAfterMs }).toEqual({ allowed: false, reason: 'locked', retryAfterMs: HOUR });

  clock.advance(HOUR - 60_000);
  expect(await flood(limiter, 1_500, 'b')).toBe(1_500);
  const late = await limiter.consume(victim);
  expect({ allowed: late.allowed, reason: late.reason, retryAfterMs: late.retryAfterMs }).toEqual({ allowed: false, reason: 'locked', retryAfterMs: 60_000 });

  clock.advance(60_000);
  expect((await limiter.consume(victim)).allowed).toBe(true);
  // The store stays bounded: the plain LRU and the protected share, each at most its max.
  expect(store.size).toBeLessThanOrEqual(1_000 + 10_000);
});

it('a caller refused by its limit (no lock-out) keeps its refusal through the flood, until the window ends', async () => {
  const clock = new FakeClock();
  const store = new MemoryStore({ maxKeys: 1_000, clock: clock.now });
  const limiter = createLimiter({ store, prefix: 'api', limit: 3, windowMs: '10m', algorithm: 'fixed-window', blockCacheSize: 100, clock: clock.now });
  const victim = '2001:db8:aaaa:2::/64';
  for (let i = 0; i < 3; i++) expect((await limiter.consume(victim)).allowed).toBe(true);
  expect((await limiter.consume(victim)).allowed).toBe(false);
  expect(await flood(limiter, 1_500, 'c')).toBe(1_500);
  expect(await flood(limiter, 150, 'f', 4)).toBe(450);
  expect(limiter.blocked(victim)).toBeUndefined();
  const after = await limiter.consume(victim);
  expect({ allowed: after.allowed, reason: after.reason }).toEqual({ allowed: false, reason: 'limited' });
  clock.advance(after.retryAfterMs);
  expect((await limiter.consume(victim)).allowed).toBe(true);
});

describe('a full protected share', () => {
  it('never displaces a lock-out in force: a lock-out that finds no room goes to the plain LRU, with one warning', async () => {
    const clock = new FakeClock();
    const rec = recorder();
    const store = new MemoryStore({ maxKeys: 100, maxProtectedKeys: 2, clock: clock.now });
    const limiter = loginLimiter(store, clock, rec.logger);
    await lockOut(limiter, 'a'); // a's lock, and a's refusing limit state (a block): the share is full
    expect(rec.lines).toEqual([]);
    await lockOut(limiter, 'b'); // b's lock takes the place of a's block; b's own block finds none
    expect(rec.lines.filter((l) => l.includes('protected share is full'))).toHaveLength(1);
    await lockOut(limiter, 'c'); // two lock-outs in force: c's finds no room, and no second warning
    expect(rec.lines.filter((l) => l.includes('protected share is full'))).toHaveLength(1);
    expect(store.warnings).toHaveLength(1);
    await flood(limiter, 500, 'd', 1);
    await flood(limiter, 150, 'e', 3); // and the block cache (100) forgets all three
    for (const subject of ['a', 'b']) expect((await limiter.consume(subject)).reason).toBe('locked');
    // c's lock-out was in the plain LRU, where the flood evicted it: the loss the warning names.
    expect((await limiter.consume('c')).allowed).toBe(true);
  });

  it('a block gives way only to a lock-out or to a block that ends later, never to plain traffic', async () => {
    for (const order of [['x', 'y'], ['y', 'x']]) {
      const clock = new FakeClock();
      const store = new MemoryStore({ maxKeys: 100, maxProtectedKeys: 1, clock: clock.now });
      const logger = recorder().logger;
      const limiters: Record<string, Limiter> = {
        x: createLimiter({ store, prefix: 'l', limit: 1, windowMs: '1h', algorithm: 'fixed-window', blockCacheSize: 0, clock: clock.now, logger }),
        y: createLimiter({ store, prefix: 's', limit: 1, windowMs: '1m', algorithm: 'fixed-window', blockCacheSize: 0, clock: clock.now, logger }),
      };
      for (const subject of order) {
        await limiters[subject].consume(subject);
        expect((await limiters[subject].consume(subject)).allowed).toBe(false);
      }
      await flood(limiters.y, 200, 'f');
      // Whatever the order, the block that ends last (x's hour) is the one held; y's minute is not.
      expect({ order, x: (await limiters.x.consume('x')).allowed, y: (await limiters.y.consume('y')).allowed }).toEqual({ order, x: false, y: true });
    }
  });

  it('hands a hold that ended back to the plain LRU instead of dropping it', async () => {
    const clock = new FakeClock();
    const store = new MemoryStore({ maxKeys: 100, maxProtectedKeys: 2, clock: clock.now });
    const limiter = createLimiter({ store, prefix: 'p', limit: 1, windowMs: '1m', algorithm: 'fixed-window', blockCacheSize: 0, clock: clock.now, logger: recorder().logger });
    for (const s of ['a', 'b']) {
      await limiter.consume(s);
      expect((await limiter.consume(s)).allowed).toBe(false); // held till the minute ends
    }
    clock.advance(30_000);
    await limiter.consume('c');
    expect((await limiter.consume('c')).allowed).toBe(false); // a's and b's holds end first: one goes back to the LRU
    expect((await limiter.consume('a')).allowed).toBe(false);
    expect((await limiter.consume('b')).allowed).toBe(false);
  });

  it('rejects a bad maxProtectedKeys at construction', () => {
    expect(() => new MemoryStore({ maxProtectedKeys: 0 })).toThrow(/maxProtectedKeys/);
  });
});
