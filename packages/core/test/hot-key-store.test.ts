// HotKeyStore over a MemoryStore with a simulated clock: options, leasing, and the documented bounds per algorithm.
import { prng } from '@floodgate/testing';
import {
  createLimiter,
  FloodgateError,
  HotKeyStore,
  MemoryStore,
  type LimitOptions,
  type Store,
  type StoreLimit,
  type StoreRequest,
  type StoreResult,
} from '../src';
import { resolveLimiterOptions } from '../src/internal';

/** Counts the calls that reach the shared store (the real MemoryStore underneath). */
class CountingStore implements Store {
  readonly name = 'counting';
  calls = 0;
  constructor(private readonly inner: Store) {}
  evaluate(request: StoreRequest): Promise<StoreResult> {
    this.calls++;
    return this.inner.evaluate(request);
  }
  reset(keys: readonly string[]): Promise<void> {
    return this.inner.reset(keys);
  }
}

/** A store whose backend is down: every call rejects, as a RedisStore does during an outage. */
class DownStore implements Store {
  readonly name = 'down';
  calls = 0;
  async evaluate(): Promise<StoreResult> {
    this.calls++;
    throw new FloodgateError('FG_STORE_UNAVAILABLE', 'Redis connection is reconnecting.');
  }
  async reset(): Promise<void> {}
}

const KEYS1 = ['t:{s}:a'];
const consume = (limits: StoreLimit[], cost = 1, keys = KEYS1.slice(0, limits.length)): StoreRequest => ({
  keys: keys.length === limits.length ? keys : limits.map((_, i) => `t:{s}:${i}`),
  limits,
  cost,
  mode: 'consume',
});

describe('HotKeyStore options', () => {
  const store = new MemoryStore();
  it.each([
    [{ store, instances: 0 }, 'instances'],
    [{ store, instances: 2.5 }, 'instances'],
    [{ store, instances: 2, threshold: 0 }, 'threshold'],
    [{ store, instances: 2, leaseSize: -1 }, 'leaseSize'],
    [{ store, instances: 2, leaseMs: '1x' }, 'leaseMs'],
    [{ store, instances: 2, maxSubjects: 0 }, 'maxSubjects'],
    [{ store, instances: 2, clock: 5 }, 'clock'],
    [{ instances: 2 }, 'store'],
  ])('rejects %p naming `%s`', (options, option) => {
    expect(() => new HotKeyStore(options as never)).toThrow(expect.objectContaining({ code: 'FG_INVALID_OPTION', option }));
  });

  it('defaults instances to 1, or to the limiter\'s instances', async () => {
    expect(new HotKeyStore({ store }).instances).toBe(1);
    const own = new CountingStore(new MemoryStore());
    const limiter = createLimiter({ store: own, limit: 1000, instances: 4, hotKeys: { threshold: 1 } });
    // Leases of a tenth of the share: 1000 / 4 / 10 = 25 units per store call.
    for (let i = 0; i < 25; i++) await limiter.consume('a');
    expect(own.calls).toBe(1);
    await limiter.consume('a');
    expect(own.calls).toBe(2);
  });

  it('names the option under hotKeys when given to createLimiter', () => {
    expect(() => createLimiter({ limit: 10, hotKeys: { instances: -3 } })).toThrow(
      expect.objectContaining({ code: 'FG_INVALID_OPTION', option: 'hotKeys.instances' }),
    );
    expect(() => createLimiter({ limit: 10, hotKeys: true as never })).toThrow(
      expect.objectContaining({ code: 'FG_INVALID_OPTION', option: 'hotKeys' }),
    );
  });

  it('parses hotKeys with the limiter\'s other options, at construction: what a limiter is built from is already checked', () => {
    const clock = () => 7;
    const parsed = resolveLimiterOptions({ limit: 10, instances: 3, clock, hotKeys: { threshold: 5, leaseMs: '2s' } }).hotKeys;
    expect(parsed).toEqual({ instances: 3, threshold: 5, leaseSize: undefined, leaseMs: 2000, maxSubjects: 10_000, clock });
    expect(resolveLimiterOptions({ limit: 10 }).hotKeys).toBeUndefined();
  });
});

describe('HotKeyStore behaviour', () => {
  let now = 0;
  const clock = () => now;
  beforeEach(() => {
    now = 1_000_000;
  });
  const fixed = (capacity: number, windowMs = 60_000): StoreLimit[] => [{ algorithm: 'fixed-window', capacity, windowMs }];

  it('passes a cold subject straight through', async () => {
    const counting = new CountingStore(new MemoryStore({ clock }));
    const hot = new HotKeyStore({ store: counting, instances: 1, threshold: 50, clock });
    for (let i = 0; i < 49; i++) expect((await hot.evaluate(consume(fixed(1000)))).allowed).toBe(true);
    expect(counting.calls).toBe(49);
    expect(hot.stats).toEqual({ local: 0, leases: 0, deniedLeases: 0, localDenials: 0, passThrough: 49 });
  });

  it('leases blocks once hot, serves from them, and reports remaining as store + local', async () => {
    const counting = new CountingStore(new MemoryStore({ clock }));
    const hot = new HotKeyStore({ store: counting, instances: 1, threshold: 1, leaseSize: 10, clock });
    const first = await hot.evaluate(consume(fixed(100)));
    expect(first.allowed).toBe(true);
    expect(first.results[0].remaining).toBe(99); // 90 left in the store + 9 held here
    const second = await hot.evaluate(consume(fixed(100)));
    expect(second.results[0].remaining).toBe(98);
    expect(counting.calls).toBe(1);
    for (let i = 0; i < 98; i++) await hot.evaluate(consume(fixed(100)));
    expect(counting.calls).toBe(10);
    const over = await hot.evaluate(consume(fixed(100)));
    expect(over.allowed).toBe(false);
    expect(over.results[0].retryAfterMs).toBeGreaterThan(0);
  });

  it('draws one lease for many concurrent requests (single flight)', async () => {
    const counting = new CountingStore(new MemoryStore({ clock }));
    const hot = new HotKeyStore({ store: counting, instances: 1, threshold: 1, leaseSize: 25, clock });
    const results = await Promise.all(Array.from({ length: 100 }, () => hot.evaluate(consume(fixed(1000)))));
    expect(results.every((r) => r.allowed)).toBe(true);
    expect(counting.calls).toBe(4);
    expect(hot.stats).toEqual({ local: 96, leases: 4, deniedLeases: 0, localDenials: 0, passThrough: 0 });
  });

  it('denies locally until a whole lease fits, when that is within leaseMs', async () => {
    const counting = new CountingStore(new MemoryStore({ clock }));
    const hot = new HotKeyStore({ store: counting, instances: 1, threshold: 1, leaseSize: 10, leaseMs: 1_000, clock });
    // Another instance took 95 of 100 in a 1 s window: a whole lease fits again within 1 s.
    await counting.evaluate(consume(fixed(100, 1_000), 95));
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await hot.evaluate(consume(fixed(100, 1_000))));
    expect(decisions.every((d) => !d.allowed)).toBe(true);
    expect(counting.calls).toBe(2); // the other instance + one missed lease; then local denials
    expect(hot.stats).toMatchObject({ leases: 0, deniedLeases: 1, localDenials: 4 });
    const last = decisions[4].results[0];
    expect(last).toMatchObject({ allowed: false, remaining: 5 });
    expect(last.retryAfterMs).toBeGreaterThan(0);
    expect(last.retryAfterMs).toBeLessThanOrEqual(1_000);
    now += last.retryAfterMs;
    expect((await hot.evaluate(consume(fixed(100, 1_000)))).allowed).toBe(true);
    expect(counting.calls).toBe(3);
  });

  it('leases exactly what is left when a whole lease is further off than leaseMs', async () => {
    const counting = new CountingStore(new MemoryStore({ clock }));
    const hot = new HotKeyStore({ store: counting, instances: 1, threshold: 1, leaseSize: 10, leaseMs: 1_000, clock });
    // Another instance took 95 of 100 in a 1 h window: stranding 5 units for up to an hour is not worth one call.
    await counting.evaluate(consume(fixed(100, 3_600_000), 95));
    const decisions = [];
    for (let i = 0; i < 10; i++) decisions.push(await hot.evaluate(consume(fixed(100, 3_600_000))));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5); // exactly what was left: nothing lost, nothing extra
    // 1 (the other instance) + a missed lease of 10 + a lease of the 5 left + a missed lease of 10.
    expect(counting.calls).toBe(4);
    expect(hot.stats).toMatchObject({ leases: 1, deniedLeases: 2, localDenials: 4 });
    expect(decisions[9].results[0]).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('peeks locally from a live lease and never draws one', async () => {
    const counting = new CountingStore(new MemoryStore({ clock }));
    const hot = new HotKeyStore({ store: counting, instances: 1, threshold: 1, leaseSize: 10, clock });
    const peek: StoreRequest = { ...consume(fixed(100)), mode: 'peek' };
    expect((await hot.evaluate(peek)).results[0].remaining).toBe(99);
    expect(counting.calls).toBe(1);
    await hot.evaluate(consume(fixed(100)));
    expect(counting.calls).toBe(2);
    const local = await hot.evaluate(peek);
    expect(local.results[0].remaining).toBe(98); // 90 in the store + 9 held - 1 for the peeked cost
    expect(counting.calls).toBe(2);
  });

  it('ends a lease at leaseMs and at the edge of its fixed or sliding-counter window', async () => {
    for (const algorithm of ['fixed-window', 'sliding-window-counter'] as const) {
      now = 1_000_000 + 900; // 100 ms before a 1 s window ends
      const counting = new CountingStore(new MemoryStore({ clock }));
      const hot = new HotKeyStore({ store: counting, instances: 1, threshold: 1, leaseSize: 10, leaseMs: 5_000, clock });
      const limits: StoreLimit[] = [{ algorithm, capacity: 100, windowMs: 1_000 }];
      await hot.evaluate(consume(limits));
      now += 99;
      await hot.evaluate(consume(limits));
      expect(counting.calls).toBe(1);
      now += 1; // the window's edge
      await hot.evaluate(consume(limits));
      expect(counting.calls).toBe(2);
    }
    const counting = new CountingStore(new MemoryStore({ clock }));
    const hot = new HotKeyStore({ store: counting, instances: 1, threshold: 1, leaseSize: 10, leaseMs: 50, clock });
    const log: StoreLimit[] = [{ algorithm: 'sliding-window-log', capacity: 100, windowMs: 10_000 }];
    await hot.evaluate(consume(log));
    now += 49;
    await hot.evaluate(consume(log));
    expect(counting.calls).toBe(1);
    now += 1;
    await hot.evaluate(consume(log));
    expect(counting.calls).toBe(2);
  });

  it('reset drops the local lease and the stored state', async () => {
    const counting = new CountingStore(new MemoryStore({ clock }));
    const hot = new HotKeyStore({ store: counting, instances: 1, threshold: 1, leaseSize: 10, clock });
    for (let i = 0; i < 5; i++) await hot.evaluate(consume(fixed(10)));
    await hot.reset(KEYS1);
    const after = await hot.evaluate(consume(fixed(10)));
    expect(after.results[0].remaining).toBe(9);
    expect(counting.calls).toBe(2);
  });

  it('rejects when the store fails, for the drawer and the waiters alike', async () => {
    const down = new DownStore();
    const hot = new HotKeyStore({ store: down, instances: 2, threshold: 1, leaseSize: 10, clock });
    const settled = await Promise.allSettled(Array.from({ length: 5 }, () => hot.evaluate(consume(fixed(100)))));
    expect(settled.every((s) => s.status === 'rejected' && (s.reason as FloodgateError).code === 'FG_STORE_UNAVAILABLE')).toBe(true);
  });

  it('is wired into createLimiter by the hotKeys option', async () => {
    const counting = new CountingStore(new MemoryStore());
    const limiter = createLimiter({
      store: counting,
      limit: 100,
      windowMs: '1h',
      algorithm: 'fixed-window',
      blockCacheSize: 0,
      hotKeys: { instances: 2, threshold: 1, leaseSize: 10 },
    });
    let admitted = 0;
    for (let i = 0; i < 150; i++) if ((await limiter.consume('alice')).allowed) admitted++;
    expect(admitted).toBe(100);
    // 10 leases, then the denials go to the store one by one (no block cache here).
    expect(counting.calls).toBeLessThanOrEqual(10 + 50 + 1);
    expect(counting.calls).toBeGreaterThanOrEqual(10);
  });
});

interface Admission {
  t: number;
  cost: number;
}

interface SimOptions {
  limits: LimitOptions[];
  instances: number;
  leaseSize?: number;
  leaseMs?: number;
  hotKeys: boolean;
  durationMs: number;
  seed: number;
  maxCost?: number;
  /** Chance per ms that an instance receives 1-3 requests, drawn from [0, load) every 700 ms. */
  load: number;
}

interface SimResult {
  admitted: Admission[];
  requests: number;
  calls: number;
  limits: StoreLimit[];
}

/**
 * N limiters (instances, each with its block cache) share one MemoryStore under one simulated
 * clock. Each ms, each instance receives 0-3 requests for one subject (bursty: the rate changes
 * every 700 ms, from idle to several times the limit), all settled before the clock moves.
 */
async function simulate(o: SimOptions): Promise<SimResult> {
  const start = 7_000_123; // not aligned to any window
  let now = start;
  const clock = () => now;
  const counting = new CountingStore(new MemoryStore({ clock, maxKeys: 100 }));
  const limiters = Array.from({ length: o.instances }, () =>
    createLimiter({
      store: counting,
      limits: o.limits,
      clock,
      // A MemoryStore answers at once; a decision that takes this long means a hang, not a slow machine.
      timeoutMs: 60_000,
      logger: { warn: (m: string, d?: unknown) => console.log('WARN', m, d), error: (m: string, d?: unknown) => console.log('ERR', m, d) },
      hotKeys: o.hotKeys ? { instances: o.instances, threshold: 20, leaseSize: o.leaseSize, leaseMs: o.leaseMs } : undefined,
    }),
  );
  const random = prng(o.seed).next;
  const admitted: Admission[] = [];
  let requests = 0;
  let intensity = 0.3;
  for (let t = 0; t < o.durationMs; t++) {
    now = start + t;
    if (t % 700 === 0) intensity = random() * o.load;
    const batch: Promise<void>[] = [];
    for (const limiter of limiters) {
      const n = random() < intensity ? 1 + Math.floor(random() * 3) : 0;
      for (let k = 0; k < n; k++) {
        const cost = 1 + Math.floor(random() * (o.maxCost ?? 1));
        requests++;
        batch.push(
          limiter.consume('subject', { cost }).then((d) => {
            if (d.degraded) throw new Error(`degraded decision: ${d.reason}`);
            if (d.allowed) admitted.push({ t: now, cost });
          }),
        );
      }
    }
    await Promise.all(batch);
  }
  return { admitted, requests, calls: counting.calls, limits: limiters[0].options.limits.map((l) => l.store) };
}

/** Units admitted beyond the limit, the worst case over the run, as each algorithm defines its limit. */
function overAdmission(limit: StoreLimit, admitted: Admission[]): number {
  const cap = limit.capacity;
  const units = admitted.flatMap((a) => new Array<number>(a.cost).fill(a.t));
  let worst = 0;
  if (limit.algorithm === 'fixed-window') {
    const perWindow = new Map<number, number>();
    for (const t of units) perWindow.set(Math.floor(t / limit.windowMs), (perWindow.get(Math.floor(t / limit.windowMs)) ?? 0) + 1);
    for (const n of perWindow.values()) worst = Math.max(worst, n - cap);
  } else if (limit.algorithm === 'sliding-window-counter') {
    // The counter's own estimate, computed over what was admitted, just after each admission.
    const perWindow = new Map<number, number>();
    for (const t of units) {
      const w = Math.floor(t / limit.windowMs);
      perWindow.set(w, (perWindow.get(w) ?? 0) + 1);
      const elapsed = t - w * limit.windowMs;
      const est = ((perWindow.get(w - 1) ?? 0) * (limit.windowMs - elapsed)) / limit.windowMs + perWindow.get(w)!;
      worst = Math.max(worst, est - cap);
    }
  } else if (limit.algorithm === 'sliding-window-log') {
    let first = 0;
    units.forEach((t, i) => {
      while (units[first] <= t - limit.windowMs) first++;
      worst = Math.max(worst, i - first + 1 - cap);
    });
  } else if ('refillPerSecond' in limit) {
    // token-bucket and gcra: at most burst + rate x (t_j - t_i) units in any [t_i, t_j].
    const perMs = limit.refillPerSecond / 1000;
    let best = -Infinity;
    units.forEach((t, j) => {
      best = Math.max(best, perMs * t - j);
      worst = Math.max(worst, j + 1 - perMs * t + best - cap);
    });
  }
  return worst;
}

describe('HotKeyStore bounds (simulated clock, 4 instances)', () => {
  const report: string[] = [];
  afterAll(() => {
    if (process.env.FLOODGATE_PRINT_MEASUREMENTS) console.log(report.join('\n'));
  });

  const cases: [string, LimitOptions, number][] = [
    // name, limit, documented worst case with hot keys (units over the limit per window or envelope)
    ['fixed-window', { algorithm: 'fixed-window', limit: 400, windowMs: 1_000 }, 0],
    ['sliding-window-counter', { algorithm: 'sliding-window-counter', limit: 400, windowMs: 1_000 }, 0],
    ['sliding-window-log', { algorithm: 'sliding-window-log', limit: 400, windowMs: 1_000 }, 4 * 10],
    ['token-bucket', { algorithm: 'token-bucket', burst: 400, refillPerSecond: 400 }, 4 * 10],
    ['gcra', { algorithm: 'gcra', burst: 400, refillPerSecond: 400 }, 4 * 10],
  ];

  it.each(cases)('%s: over-admission within the documented bound, far fewer store calls', async (name, limit, bound) => {
    const base = { limits: [limit], instances: 4, durationMs: 4_000, seed: 42, load: 0.1 };
    const off = await simulate({ ...base, hotKeys: false });
    const on = await simulate({ ...base, hotKeys: true, leaseMs: 1_000 });
    const overOff = overAdmission(off.limits[0], off.admitted);
    const overOn = overAdmission(on.limits[0], on.admitted);
    const used = (r: SimResult) => r.admitted.reduce((sum, a) => sum + a.cost, 0);
    const per1000 = (r: SimResult) => ((1000 * r.calls) / r.requests).toFixed(1);
    report.push(
      `${name}: requests=${off.requests} | off over=${overOff.toFixed(2)} admitted=${used(off)} calls/1000=${per1000(off)} | ` +
        `on over=${overOn.toFixed(2)} (bound ${bound}) admitted=${used(on)} calls/1000=${per1000(on)}`,
    );
    expect(overOff).toBeLessThanOrEqual(1e-6); // the checker agrees with the plain store
    expect(overOn).toBeLessThanOrEqual(bound + 1e-6);
    expect(on.calls).toBeLessThan(off.calls / 2);
    // Unused leases are under-admission; the limit still binds (the load is above it).
    expect(used(on)).toBeGreaterThan(used(off) * 0.8);
  });

  it('multi-limit with costs 1-3: fixed-window and sliding-window-counter bounds stay 0', async () => {
    const limits: LimitOptions[] = [
      { name: 'second', algorithm: 'fixed-window', limit: 300, windowMs: 1_000 },
      { name: 'sustained', algorithm: 'sliding-window-counter', limit: 1_500, windowMs: 5_000 },
    ];
    const on = await simulate({ limits, instances: 4, durationMs: 6_000, seed: 7, load: 0.1, hotKeys: true, maxCost: 3, leaseMs: 2_000 });
    const over = on.limits.map((l) => overAdmission(l, on.admitted));
    report.push(`multi-limit: on over=${over.map((x) => x.toFixed(2)).join(',')} calls/1000=${((1000 * on.calls) / on.requests).toFixed(1)}`);
    expect(over[0]).toBeLessThanOrEqual(0);
    expect(over[1]).toBeLessThanOrEqual(1e-6);
  });

  it('sliding-window-log: the instances x leaseSize worst case is reachable (a stale lease served late)', async () => {
    let now = 0;
    const clock = () => now;
    const memory = new MemoryStore({ clock });
    const hot = new HotKeyStore({ store: memory, instances: 1, threshold: 1, leaseSize: 5, leaseMs: 1_000, clock });
    const limits: StoreLimit[] = [{ algorithm: 'sliding-window-log', capacity: 10, windowMs: 1_000 }];
    const admitted: Admission[] = [];
    const burst = async (t: number, n: number) => {
      now = t;
      const rs = await Promise.all(Array.from({ length: n }, () => hot.evaluate(consume(limits))));
      rs.forEach((r) => r.allowed && admitted.push({ t, cost: 1 }));
    };
    await burst(0, 1); // leases 5 units charged at t=0
    await burst(999, 4); // served at 999 from the t=0 lease
    await burst(1_000, 20); // the t=0 entries have left the log
    expect(overAdmission(limits[0], admitted)).toBe(4); // <= instances x leaseSize = 5
    report.push(`sliding-window-log adversarial: over=${overAdmission(limits[0], admitted)} (bound 5)`);
  });
});
