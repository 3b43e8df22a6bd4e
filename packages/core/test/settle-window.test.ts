// The default settle window, 15 minutes: a reservation settles up to its last ms and is 'expired' from then on, on a clock the test moves (no waiting).
import { createLimiter, MemoryStore, type SettleOptions } from '../src';

const FIFTEEN_MINUTES = 15 * 60_000;

/** A limiter on a memory store whose clock only the test moves; `settle` as given (undefined: not set at all). */
function limiterAt(settle: SettleOptions | undefined) {
  let now = Date.UTC(2026, 0, 1);
  const limiter = createLimiter({ store: new MemoryStore({ clock: () => now }), algorithm: 'fixed-window', limit: 100, windowMs: '1d', blockCacheSize: 0, ...(settle ? { settle } : {}) });
  return { limiter, advance: (ms: number) => void (now += ms) };
}

describe.each([
  ['settle: {} (the defaults)', {}],
  ['settle not set', undefined],
] as const)('%s', (_name, settle) => {
  it('settles a reservation 15 min less 1 ms after it was made, and not one made 15 min before', async () => {
    const { limiter, advance } = limiterAt(settle);
    const early = await limiter.reserve('s', { cost: 10 });
    advance(1);
    const late = await limiter.reserve('s', { cost: 10 });
    advance(FIFTEEN_MINUTES - 1); // `early` is now exactly 15 min old, `late` 1 ms younger
    expect((await late.settle(4)).outcome).toBe('settled');
    expect((await early.settle(4)).outcome).toBe('expired');
    // 20 reserved, `late` settled to 4 (6 back), `early` stays charged: 14 used.
    expect((await limiter.peek('s', { cost: 0 })).remaining).toBe(86);
  });
});
