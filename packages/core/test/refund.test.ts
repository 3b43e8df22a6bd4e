// limiter.refund without Redis: bad arguments reject, a failed or skipped store resolves false, the block cache lets a refunded subject back in, Decision.at only on a store charge, hot keys pass refunds through.
import { createLimiter, FloodgateError, HotKeyStore, MemoryStore, type Store, type StoreRequest, type StoreResult } from '../src';

/** A store whose backend can be switched off, counting the calls that reach it. */
class SwitchStore implements Store {
  readonly name = 'switch';
  readonly timeoutMs = 0;
  up = true;
  readonly modes: StoreRequest['mode'][] = [];
  constructor(private readonly memory: Store = new MemoryStore()) {}
  async evaluate(request: StoreRequest): Promise<StoreResult> {
    this.modes.push(request.mode);
    if (!this.up) throw new FloodgateError('FG_STORE_UNAVAILABLE', 'backend is down');
    return this.memory.evaluate(request);
  }
  reset(keys: readonly string[]): Promise<void> {
    return this.memory.reset(keys);
  }
}

const quiet = { warn: () => undefined, error: () => undefined };

async function code(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return (error as FloodgateError).code;
  }
}

it('rejects a bad cost (FG_INVALID_COST) or a missing or bad `at` (FG_INVALID_AT), before any store call', async () => {
  const store = new SwitchStore();
  const l = createLimiter({ store, limit: 5 });
  expect(await code(l.refund('s', { at: 1, cost: -1 }))).toBe('FG_INVALID_COST');
  expect(await code(l.refund('s', { at: 1, cost: 1.5 }))).toBe('FG_INVALID_COST');
  expect(await code(l.refund('s', {} as never))).toBe('FG_INVALID_AT');
  expect(await code(l.refund('s', undefined as never))).toBe('FG_INVALID_AT');
  expect(await code(l.refund('s', { at: Number.NaN }))).toBe('FG_INVALID_AT');
  expect(await code(l.refund('s', { at: 1.5 }))).toBe('FG_INVALID_AT');
  expect(store.modes).toEqual([]);
  // The stores check a refund's `at` themselves too, with the same error.
  expect(await code(new MemoryStore().evaluate({ keys: ['k'], limits: l.options.limits.map((x) => x.store), cost: 1, mode: 'refund' }))).toBe('FG_INVALID_AT');
});

it('resolves false, never rejects, when the store fails or the breaker skips it; the units stay charged', async () => {
  const store = new SwitchStore();
  const l = createLimiter({ store, limit: 3, failMode: 'closed', logger: quiet, breaker: { failureThreshold: 1, coolDownMs: 60_000 } });
  const d = await l.consume('s');
  expect(d.at).toEqual(expect.any(Number));
  store.up = false;
  expect(await l.refund('s', { at: d.at! })).toBe(false); // the store failed: the breaker opens
  const calls = store.modes.length;
  expect(await l.refund('s', { at: d.at! })).toBe(false); // skipped: no store call
  expect(store.modes.length).toBe(calls);
  const degraded = await l.consume('s');
  expect({ reason: degraded.reason, at: degraded.at }).toEqual({ reason: 'fail-closed', at: undefined });
});

it('a refund lets a subject the block cache holds back in at once; block-cache decisions carry no `at`', async () => {
  const l = createLimiter({ store: new MemoryStore(), limit: 2, windowMs: '1h', algorithm: 'fixed-window' });
  const first = await l.consume('s');
  await l.consume('s');
  const denied = await l.consume('s');
  const cached = await l.consume('s');
  expect([denied.reason, denied.at, cached.reason, cached.at]).toEqual(['limited', undefined, 'blocked', undefined]);
  expect(await l.refund('s', { at: first.at! })).toBe(true);
  const back = await l.consume('s');
  expect({ allowed: back.allowed, remaining: back.remaining }).toEqual({ allowed: true, remaining: 0 });
});

it('fail-open decisions carry no `at`: nothing was charged to refund', async () => {
  const store = new SwitchStore();
  store.up = false;
  const l = createLimiter({ store, limit: 3, failMode: 'open', logger: quiet });
  const d = await l.consume('s');
  expect({ allowed: d.allowed, reason: d.reason, at: d.at }).toEqual({ allowed: true, reason: 'fail-open', at: undefined });
});

it('hot keys: a unit served from a lease carries the lease\'s `at`, and its refund reaches the shared store', async () => {
  let now = 1_000_000;
  const shared = new MemoryStore({ clock: () => now });
  const counting = new SwitchStore(shared);
  const hot = createLimiter({ store: counting, limit: 100, windowMs: '1h', algorithm: 'fixed-window', hotKeys: { threshold: 1, leaseSize: 10, clock: () => now } });
  const plain = createLimiter({ store: shared, limit: 100, windowMs: '1h', algorithm: 'fixed-window', blockCacheSize: 0 });
  const leased = await hot.consume('s'); // draws a lease of 10 at `now`
  now += 5;
  const local = await hot.consume('s'); // served from the lease: no store call
  expect(counting.modes).toEqual(['consume']);
  expect([leased.at, local.at]).toEqual([1_000_000, 1_000_000]);
  expect((await plain.peek('s', { cost: 0 })).remaining).toBe(90);
  expect(await hot.refund('s', { at: local.at! })).toBe(true);
  expect(counting.modes).toEqual(['consume', 'refund']);
  expect((await plain.peek('s', { cost: 0 })).remaining).toBe(91);
});
