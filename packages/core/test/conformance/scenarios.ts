// The conformance table: one set of scenarios with exact expected decisions, run against any Store.
import { prng } from '@floodgate/testing';
import { createLimiter, formatHeaders, subjectKey } from '../../src';
import type { AlgorithmName, Decision, Limiter, LimiterOptions, LimitOptions, Store } from '../../src';
import type { ExpiryWatch } from './expiry-watch';
import { FakeClock, T0 } from './fake-clock';
import { SETTLE_SCENARIOS } from './settle-scenarios';
import { SHAPE_SCENARIOS } from './shape-scenarios';
import { OVERRIDE_SCENARIOS } from './override-scenarios';

export interface ConformanceContext {
  /** Drives the store: MemoryStore's `clock`, RedisStore's `UNSAFE_testClock`. Starts at T0. */
  readonly clock: FakeClock;
  readonly store: Store;
  /**
   * A limiter on this store under a prefix of its own. Block cache off and failMode 'closed', so
   * every decision is the store's and a store failure can never pass for an admission.
   */
  limiter(options: LimiterOptions): Limiter;
}

export interface Scenario {
  readonly name: string;
  /** Jest's limit for this scenario, where it makes many more store calls than most (default: the config's testTimeout). */
  readonly timeoutMs?: number;
  run(ctx: ConformanceContext): Promise<void>;
}

export interface ConformanceOptions {
  /** Key prefix of this run; every key written starts with `${prefix}-` (SCAN it after). Default: random. */
  prefix?: string;
  /**
   * Every limiter under this one prefix instead (for a Redis user whose ACL allows only `<prefix>:*`),
   * with `clear` (deleting the prefix's keys) run before each scenario to keep scenarios apart.
   */
  sharedPrefix?: { readonly prefix: string; clear(): Promise<void> };
  /** False for a store that keeps no overrides (no putOverride: DurableObjectStore): the override scenarios are left out. */
  overrides?: boolean;
  /**
   * For a store on Redis: the watch that names a key Redis expired in real time. A scenario that
   * fails after one of its own keys expired ran outside its premise (see describeConformance) and
   * runs again under a fresh prefix, on a fresh clock and store, at most twice more.
   */
  expiry?: () => ExpiryWatch | undefined;
}

/** How many times a scenario runs at most when Redis expired its keys in real time each time. */
const ATTEMPTS = 3;

/**
 * Runs every scenario of the table, each with a fresh FakeClock at T0 and the store `makeStore`
 * builds on it (a new store per scenario, or one per clock: the scenarios use separate keys).
 * For a Redis store: Redis still expires keys in real time, so the scenarios only write states
 * that matter for far longer (fake ms) than the real ms a scenario takes.
 */
export function describeConformance(
  label: string,
  makeStore: (clock: () => number) => Store | Promise<Store>,
  options: ConformanceOptions = {},
): void {
  const prefix = options.prefix ?? `conf-${Math.random().toString(36).slice(2, 10)}`;
  describe(label, () => {
    table(options.overrides !== false).forEach((scenario, n) => {
      it(scenario.name, () => runScenario(scenario, `${prefix}-${n}`, makeStore, options), scenario.timeoutMs);
    });
  });
}

/** The table's scenarios in order; the override scenarios only for a store that keeps overrides. */
const table = (overrides: boolean): Scenario[] => [...SCENARIOS, ...SETTLE_SCENARIOS, ...SHAPE_SCENARIOS, ...(overrides ? OVERRIDE_SCENARIOS : [])];

/** A scenario of the table by name (the harness's own tests pick one). */
export function scenarioNamed(name: string): Scenario {
  const found = table(true).find((s) => s.name === name);
  if (!found) throw new Error(`no conformance scenario named ${name}`);
  return found;
}

/**
 * One scenario on a fresh FakeClock at T0 and the store `makeStore` builds on it, its limiters under
 * `base`-N (N counting them). Run again under `base`rK-N, at most ATTEMPTS in all, only when it
 * failed after Redis expired one of its keys in real time (options.expiry).
 */
export async function runScenario(
  scenario: Scenario,
  base: string,
  makeStore: (clock: () => number) => Store | Promise<Store>,
  options: ConformanceOptions = {},
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const clock = new FakeClock();
    const store = await makeStore(clock.now);
    const shared = options.sharedPrefix;
    await shared?.clear();
    // The first attempt's keys as they always were; an attempt after it under a prefix of its own.
    const own = attempt === 0 ? `${base}-` : `${base}r${attempt}-`;
    let limiters = 0;
    try {
      await scenario.run({
        clock,
        store,
        limiter: (o) => createLimiter({ ...o, store, prefix: shared ? shared.prefix : `${own}${limiters++}`, blockCacheSize: 0, failMode: 'closed' }),
      });
      return;
    } catch (error) {
      // Not under a shared prefix: its keys outlive one scenario, so an expiry there names none.
      const watch = shared ? undefined : options.expiry?.();
      if (attempt + 1 < ATTEMPTS && watch && (await watch.expiredUnder(own))) continue;
      throw error;
    }
  }
}

type Want = Partial<Pick<Decision, 'allowed' | 'reason' | 'remaining' | 'resetMs' | 'retryAfterMs' | 'policy'>>;

/** Checks the named fields of a decision; every decision must come from the store, never degraded. */
async function expectDecision(label: string, got: Decision | Promise<Decision>, want: Want): Promise<Decision> {
  const d = await got;
  const seen: Record<string, unknown> = { label, degraded: d.degraded };
  for (const key of Object.keys(want)) seen[key] = d[key as keyof Want];
  expect(seen).toEqual({ label, degraded: false, ...want });
  return d;
}

function limitOf(d: Decision, policy: string) {
  const found = d.limits.find((l) => l.policy === policy);
  if (!found) throw new Error(`no limit named ${policy} in ${JSON.stringify(d.limits)}`);
  return found;
}

/**
 * retryAfterMs is exact: a request of `cost` is denied now with retry r > 0; after r - 1 ms it is
 * still denied (and told 1 ms); after r ms it is admitted. Leaves the clock r ms later. Returns r.
 */
async function expectExactRetry(ctx: ConformanceContext, l: Limiter, subject: string, cost: number, label: string): Promise<number> {
  const d = await l.peek(subject, { cost });
  expect({ label, allowed: d.allowed, degraded: d.degraded, positive: d.retryAfterMs > 0 }).toEqual({
    label,
    allowed: false,
    degraded: false,
    positive: true,
  });
  const r = d.retryAfterMs;
  if (r > 1) {
    ctx.clock.advance(r - 1);
    await expectDecision(`${label}: after retryAfterMs - 1 = ${r - 1} ms`, l.peek(subject, { cost }), { allowed: false, retryAfterMs: 1 });
    ctx.clock.advance(1);
  } else {
    ctx.clock.advance(r);
  }
  await expectDecision(`${label}: after retryAfterMs = ${r} ms`, l.peek(subject, { cost }), { allowed: true, retryAfterMs: 0 });
  return r;
}

const WINDOWED: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter'];
const isWindowed = (a: AlgorithmName) => WINDOWED.includes(a);

/** Limit 5: per 60 s for window algorithms; burst 5 refilled at 1/s for token-bucket and gcra. */
function five(algorithm: AlgorithmName): LimitOptions {
  return isWindowed(algorithm) ? { algorithm, limit: 5, windowMs: 60_000 } : { algorithm, burst: 5, refillPerSecond: 1 };
}

/**
 * Expected figures for limit 5 exhausted at T0, one unit at a time: resetMs after the k-th
 * admission, then the denial of one more. sliding-window-counter: 5 units in this window weigh
 * fully until it ends and then fade over the next; one more fits once 5 * (1 - e / 60000) <= 4,
 * e = 12000 ms into the next window: 72000 ms.
 */
const EXHAUST: Record<AlgorithmName, { reset: (k: number) => number; deniedReset: number; retry: number }> = {
  'fixed-window': { reset: () => 60_000, deniedReset: 60_000, retry: 60_000 },
  'sliding-window-log': { reset: () => 60_000, deniedReset: 60_000, retry: 60_000 },
  // The admission that leaves nothing resets when the next unit is back: the denial's retry (draft-10's t, issue #46).
  'sliding-window-counter': { reset: (k) => (k === 5 ? 72_000 : 120_000), deniedReset: 120_000, retry: 72_000 },
  'token-bucket': { reset: (k) => k * 1000, deniedReset: 5000, retry: 1000 },
  gcra: { reset: (k) => k * 1000, deniedReset: 5000, retry: 1000 },
};

/**
 * After cost 3 at T0, a request of cost 3 (2 remain). sliding-window-counter: 3 * (1 - e / 60000) + 3
 * <= 5 at e = 20000 into the next window: 80000 ms. token-bucket and gcra: one unit at 1/s.
 */
const OVERDRAW: Record<AlgorithmName, { resetMs: number; retryAfterMs: number }> = {
  'fixed-window': { resetMs: 60_000, retryAfterMs: 60_000 },
  'sliding-window-log': { resetMs: 60_000, retryAfterMs: 60_000 },
  'sliding-window-counter': { resetMs: 120_000, retryAfterMs: 80_000 },
  'token-bucket': { resetMs: 3000, retryAfterMs: 1000 },
  gcra: { resetMs: 3000, retryAfterMs: 1000 },
};

const ALL: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];

/**
 * Odd parameters for the retry walk: windows and rates that do not divide evenly. On Redis, keys
 * expire in real time while the scenarios run on the fake clock, so every state written here
 * lives at least ~1 s (fake), far longer than the few real ms until it is read again.
 */
const ODD: Record<AlgorithmName, LimitOptions> = {
  'fixed-window': { algorithm: 'fixed-window', limit: 4, windowMs: 10_000 },
  'sliding-window-log': { algorithm: 'sliding-window-log', limit: 4, windowMs: 7_777 },
  'sliding-window-counter': { algorithm: 'sliding-window-counter', limit: 7, windowMs: 7_777 },
  'token-bucket': { algorithm: 'token-bucket', burst: 4, refillPerSecond: 0.7 },
  gcra: { algorithm: 'gcra', burst: 4, refillPerSecond: 0.7 },
};

/**
 * Long windows and slow refills, where the floating-point slack of the admission test (1e-9
 * units) spans several ms and rounding noise decides the last ms. unitMs: time for one unit.
 */
const EXTREME: readonly { label: string; options: LimitOptions; unitMs: number }[] = [
  { label: 'sliding-window-counter, 100 per 30 days', options: { algorithm: 'sliding-window-counter', limit: 100, windowMs: '30d' }, unitMs: 30 * 86_400_000 },
  { label: 'sliding-window-counter, 2 per 365 days', options: { algorithm: 'sliding-window-counter', limit: 2, windowMs: '365d' }, unitMs: 365 * 86_400_000 },
  { label: 'token-bucket, burst 1000 refilled 1 per hour', options: { algorithm: 'token-bucket', burst: 1000, refillPerSecond: 1 / 3600 }, unitMs: 3_600_000 },
  { label: 'token-bucket, burst 7 refilled 0.3/s', options: { algorithm: 'token-bucket', burst: 7, refillPerSecond: 0.3 }, unitMs: 3334 },
  { label: 'gcra, burst 1000 refilled 1 per hour', options: { algorithm: 'gcra', burst: 1000, refillPerSecond: 1 / 3600 }, unitMs: 3_600_000 },
  { label: 'sliding-window-log, 1000 per day', options: { algorithm: 'sliding-window-log', limit: 1000, windowMs: '1d' }, unitMs: 86_400_000 },
  { label: 'fixed-window, 1000 per 365 days', options: { algorithm: 'fixed-window', limit: 1000, windowMs: '365d' }, unitMs: 365 * 86_400_000 },
];

/** Multi-limit pairs: a short limit (10 per 10 s) and a long one (25 per hour), mixed algorithms (the `all` script). */
const PAIRS: readonly [AlgorithmName, AlgorithmName][] = [
  ['fixed-window', 'fixed-window'],
  ['sliding-window-log', 'sliding-window-counter'],
  ['token-bucket', 'gcra'],
  ['gcra', 'sliding-window-log'],
  ['sliding-window-counter', 'token-bucket'],
];

/** `limit` per `windowMs` for any algorithm: token-bucket and gcra take it as burst and refill rate. */
function per(name: string, algorithm: AlgorithmName, limit: number, windowMs: number): LimitOptions {
  return { name, algorithm, limit, windowMs };
}

/** An admitted consume's `at`: the store's clock when it charged (here the fake clock, read by both stores). */
async function charged(ctx: ConformanceContext, l: Limiter, subject: string, cost: number, want: Want = {}): Promise<number> {
  const d = await expectDecision(`charge ${cost}`, l.consume(subject, { cost }), { allowed: true, ...want });
  expect({ cost, at: d.at }).toEqual({ cost, at: ctx.clock.now() });
  return d.at!;
}

async function refunded(l: Limiter, subject: string, at: number, cost: number): Promise<void> {
  expect({ at, cost, applied: await l.refund(subject, { at, cost }) }).toEqual({ at, cost, applied: true });
}

/**
 * After cost 2 at T0 and cost 1 at T0 + 1 s, a refund of cost 5 at T0's charge: what a request of
 * cost 1 then sees remaining. The counters drop to zero, never below (fixed-window, sliding-window-
 * counter: 3 - 5 -> 0); the log removes only the 2 entries scored T0 (1 stays); token-bucket and
 * gcra stop at a full burst (never 8 tokens).
 */
const OVER_REFUND: Record<AlgorithmName, number> = {
  'fixed-window': 4,
  'sliding-window-log': 3,
  'sliding-window-counter': 4,
  'token-bucket': 4,
  gcra: 4,
};

export /** Moves the fake clock forward to the instant `iso` (both stores read it: the twin, and Redis through the test clock). */
function moveTo(ctx: ConformanceContext, iso: string): number {
  const t = Date.parse(iso);
  ctx.clock.advance(t - ctx.clock.now());
  return t;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * Calendar windows: a quota of 3 per period is used up, then denied until the period's last ms and
 * admitted again at the instant the next one starts; the boundaries come from the time-zone
 * database and the store (Lua, or the twin) picks the period by its clock. `windowMs` of the
 * decision is the running period's length.
 */
async function expectCalendarReset(
  ctx: ConformanceContext,
  window: NonNullable<LimitOptions['window']>,
  steps: { use: string; across?: string; resetAt: string; periodMs: number; nextMs: number },
): Promise<void> {
  const l = ctx.limiter({ limit: 3, window });
  const start = moveTo(ctx, steps.use);
  const end = Date.parse(steps.resetAt);
  for (let k = 1; k <= 3; k++) {
    const d = await expectDecision(`use ${k}`, l.consume('q'), { allowed: true, remaining: 3 - k, resetMs: end - start });
    expect({ k, windowMs: limitOf(d, 'default').windowMs }).toEqual({ k, windowMs: steps.periodMs });
  }
  if (steps.across) {
    const t = moveTo(ctx, steps.across);
    await expectDecision('across the change', l.consume('q'), { allowed: false, remaining: 0, resetMs: end - t, retryAfterMs: end - t });
  }
  moveTo(ctx, new Date(end - 1).toISOString());
  const last = await expectDecision('the period\'s last ms', l.consume('q'), { allowed: false, remaining: 0, resetMs: 1, retryAfterMs: 1 });
  // The headers state the real reset: 1 ms is 1 s in whole seconds, never 0.
  expect(formatHeaders(last, ['draft-6'])).toContainEqual(['RateLimit-Reset', '1']);
  ctx.clock.advance(1);
  const next = await expectDecision('the next period\'s first ms', l.consume('q'), { allowed: true, remaining: 2, resetMs: steps.nextMs });
  expect(limitOf(next, 'default').windowMs).toBe(steps.nextMs);
  const w = steps.nextMs / 1000;
  expect(formatHeaders(next, ['draft-10'])).toContainEqual(['RateLimit-Policy', `"default";q=3;w=${w}`]);
  expect(formatHeaders(next, ['draft-10'])).toContainEqual(['RateLimit', `"default";r=2;t=${w};floodgate-t-ms=${steps.nextMs}`]);
}

const CALENDAR_SCENARIOS: Scenario[] = [
  {
    name: 'calendar month in America/New_York across the March change: resets at local midnight on 1 April (04:00 UTC, EDT), after 31 days less an hour',
    run: (ctx) =>
      expectCalendarReset(ctx, { every: 'month', timeZone: 'America/New_York' }, {
        use: '2026-03-07T12:00:00Z',
        across: '2026-03-08T07:30:00Z',
        resetAt: '2026-04-01T04:00:00Z',
        periodMs: 31 * DAY - HOUR,
        nextMs: 30 * DAY,
      }),
  },
  {
    name: 'calendar month in America/New_York across the November change: November lasts 30 days and an hour, resetting at 05:00 UTC (EST) on 1 December',
    run: (ctx) =>
      expectCalendarReset(ctx, { every: 'month', timeZone: 'America/New_York' }, {
        use: '2026-11-01T05:00:00Z',
        across: '2026-11-01T07:00:00Z',
        resetAt: '2026-12-01T05:00:00Z',
        periodMs: 30 * DAY + HOUR,
        nextMs: 31 * DAY,
      }),
  },
  {
    name: 'calendar month in Asia/Kolkata (+05:30): February of a leap year ends at 18:30 UTC on 29 February',
    run: (ctx) =>
      expectCalendarReset(ctx, { every: 'month', timeZone: 'Asia/Kolkata' }, {
        use: '2028-02-10T00:00:00Z',
        resetAt: '2028-02-29T18:30:00Z',
        periodMs: 29 * DAY,
        nextMs: 31 * DAY,
      }),
  },
  {
    name: 'calendar month from a billing date on the 31st, 09:00 in Asia/Kolkata: February 2028 starts on the 29th, March on the 31st',
    run: (ctx) =>
      expectCalendarReset(ctx, { every: 'month', timeZone: 'Asia/Kolkata', anchor: '2026-01-31T09:00' }, {
        use: '2028-02-01T00:00:00Z',
        resetAt: '2028-02-29T03:30:00Z',
        periodMs: 29 * DAY,
        nextMs: 31 * DAY,
      }),
  },
  {
    name: 'calendar month from a billing date, the 17th at 09:00 in America/New_York: the period that spans the March change ends at 13:00 UTC (EDT)',
    run: (ctx) =>
      expectCalendarReset(ctx, { every: 'month', timeZone: 'America/New_York', anchor: '2025-12-17T09:00' }, {
        use: '2026-03-01T00:00:00Z',
        across: '2026-03-08T07:30:00Z',
        resetAt: '2026-03-17T13:00:00Z',
        periodMs: 28 * DAY - HOUR,
        nextMs: 31 * DAY,
      }),
  },
  {
    name: 'calendar day in America/New_York on the March change lasts 23 hours',
    run: (ctx) =>
      expectCalendarReset(ctx, { every: 'day', timeZone: 'America/New_York' }, {
        use: '2026-03-08T05:00:00Z',
        across: '2026-03-08T07:30:00Z',
        resetAt: '2026-03-09T04:00:00Z',
        periodMs: 23 * HOUR,
        nextMs: DAY,
      }),
  },
  {
    name: 'calendar window: a refund gives back a charge of the running period, and nothing for one of the period before',
    async run(ctx) {
      const l = ctx.limiter({ limit: 3, window: { every: 'month', timeZone: 'Asia/Kolkata' } });
      moveTo(ctx, '2028-02-29T18:00:00Z');
      const early = await charged(ctx, l, 'r', 1);
      ctx.clock.advance(10);
      const kept = await charged(ctx, l, 'r', 1);
      await refunded(l, 'r', kept, 1);
      await expectDecision('one charge left in February', l.peek('r', { cost: 0 }), { allowed: true, remaining: 2 });
      moveTo(ctx, '2028-02-29T18:30:00Z');
      const march = await charged(ctx, l, 'r', 2, { remaining: 1 });
      await refunded(l, 'r', early, 1);
      await expectDecision('February\'s charge gave nothing back in March', l.peek('r', { cost: 0 }), { allowed: true, remaining: 1 });
      await refunded(l, 'r', march, 2);
      await expectDecision('March\'s charge given back', l.peek('r', { cost: 0 }), { allowed: true, remaining: 3 });
    },
  },
];

const SCENARIOS: readonly Scenario[] = [
  ...ALL.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: a refund gives back exactly the units of the consume it names; denials and peeks carry no \`at\``,
      async run(ctx) {
        const l = ctx.limiter(five(algorithm));
        const first = await charged(ctx, l, 's', 2, { remaining: 3 });
        ctx.clock.advance(10);
        await charged(ctx, l, 's', 3, { remaining: 0 });
        const denied = await expectDecision('full', l.consume('s'), { allowed: false });
        expect([denied.at, (await l.peek('s', { cost: 0 })).at]).toEqual([undefined, undefined]);
        await refunded(l, 's', first, 2);
        await expectDecision('2 are back', l.peek('s'), { allowed: true, remaining: 1 });
        await expectDecision('cost 2 fits', l.consume('s', { cost: 2 }), { allowed: true, remaining: 0 });
        await expectDecision('and not 1 more', l.consume('s'), { allowed: false, remaining: 0 });
        // A subject never charged: nothing to give back, and it stays as it was.
        await refunded(l, 'fresh', ctx.clock.now(), 3);
        await expectDecision('fresh after a refund', l.peek('fresh', { cost: 5 }), { allowed: true, remaining: 0 });
        await expectDecision('fresh: the limit, not more', l.consume('fresh', { cost: 6 }), { allowed: false, reason: 'cost-exceeds-limit' });
      },
    }),
  ),
  ...ALL.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: a refund of more than was charged never goes below zero or past a full limit`,
      async run(ctx) {
        const l = ctx.limiter(five(algorithm));
        const first = await charged(ctx, l, 's', 2);
        ctx.clock.advance(1000);
        await charged(ctx, l, 's', 1);
        await refunded(l, 's', first, 5);
        const left = OVER_REFUND[algorithm];
        await expectDecision('after the refund', l.peek('s'), { allowed: true, remaining: left });
        await expectDecision('what is left, exactly', l.consume('s', { cost: left + 1 }), { allowed: true, remaining: 0 });
        await expectDecision('and nothing more', l.consume('s'), { allowed: false, remaining: 0 });
        // Refunding again, twice over: still never past the limit.
        await refunded(l, 's', first, 5);
        await refunded(l, 's', first, 5);
        await expectDecision('never more than the limit', l.consume('s', { cost: 6 }), { allowed: false, reason: 'cost-exceeds-limit' });
        const again = await expectDecision('peek', l.peek('s', { cost: 5 }), {});
        expect(again.remaining).toBeLessThanOrEqual(0);
      },
    }),
  ),
  {
    name: 'fixed-window: a refund across a window edge gives nothing back (the old charge no longer counts); one in the window does',
    async run(ctx) {
      const l = ctx.limiter(five('fixed-window'));
      ctx.clock.advance(59_000);
      const old = await charged(ctx, l, 's', 3);
      ctx.clock.advance(1000); // the next window
      const now = await charged(ctx, l, 's', 5, { remaining: 0 });
      await refunded(l, 's', old, 3);
      await expectDecision('the old window\'s refund', l.peek('s'), { allowed: false, remaining: 0, retryAfterMs: 60_000 });
      await refunded(l, 's', now, 1);
      await expectDecision('this window\'s refund', l.peek('s'), { allowed: true, remaining: 0 });
    },
  },
  {
    name: 'sliding-window-counter: a refund takes from the previous window\'s count or the current one, and nothing from older ones',
    async run(ctx) {
      const l = ctx.limiter(five('sliding-window-counter'));
      const w0 = await charged(ctx, l, 's', 4);
      ctx.clock.advance(90_000); // 30 s into the next window: 4 * 0.5 = 2 still count
      await expectDecision('half of the previous window', l.peek('s'), { allowed: true, remaining: 2 });
      await refunded(l, 's', w0, 2); // p: 4 -> 2, weighing 1
      await expectDecision('the previous window gave 2 back', l.peek('s'), { allowed: true, remaining: 3 });
      const w1 = await charged(ctx, l, 's', 3, { remaining: 1 }); // 1 + 3
      await refunded(l, 's', w1, 1);
      await expectDecision('the current window gave 1 back', l.peek('s'), { allowed: true, remaining: 1 });
      ctx.clock.advance(60_000); // 30 s into the window after: w1's 2 weigh 1, w0 is two back
      await refunded(l, 's', w0, 2);
      await expectDecision('two windows back: nothing', l.peek('s'), { allowed: true, remaining: 3 });
      await refunded(l, 's', w1, 2);
      await expectDecision('the previous window, again', l.peek('s'), { allowed: true, remaining: 4 });
    },
  },
  {
    name: 'sliding-window-log: a refund removes the entries scored `at`; those that left the window count for nothing',
    async run(ctx) {
      const l = ctx.limiter(five('sliding-window-log'));
      const a = await charged(ctx, l, 's', 3);
      ctx.clock.advance(30_000);
      const b = await charged(ctx, l, 's', 2, { remaining: 0 });
      await refunded(l, 's', a, 3);
      await expectDecision('the first 3 are back', l.peek('s', { cost: 3 }), { allowed: true, remaining: 0 });
      await refunded(l, 's', a + 1, 1); // no entry at that ms: nothing
      await expectDecision('a refund naming no entry', l.peek('s', { cost: 4 }), { allowed: false, remaining: 3 });
      ctx.clock.advance(60_000); // b's entries left the window
      await charged(ctx, l, 's', 5, { remaining: 0 });
      await refunded(l, 's', b, 2);
      await expectDecision('entries out of the window give nothing', l.peek('s'), { allowed: false, remaining: 0 });
    },
  },
  {
    // Issue 40, row 3's other per-unit script: one ZSET entry per unit, written and removed in slices.
    name: 'sliding-window-log at its largest limit (10,000): one request of 10,000 units, its refund, a reservation of 10,000 settled at 1 and one of 1 settled at 10,000 (a debit of 9,999) decided exactly',
    async run(ctx) {
      const l = ctx.limiter({ algorithm: 'sliding-window-log', limit: 10_000, windowMs: 60_000, settle: {} });
      const at = await charged(ctx, l, 's', 10_000, { remaining: 0 });
      await expectDecision('full', l.peek('s'), { allowed: false, remaining: 0, retryAfterMs: 60_000 });
      await refunded(l, 's', at, 10_000);
      await expectDecision('all 10,000 back', l.peek('s', { cost: 10_000 }), { allowed: true, remaining: 0 });
      ctx.clock.advance(1_000);
      const big = await l.reserve('s', { cost: 10_000 });
      expect(big.decision).toMatchObject({ allowed: true, remaining: 0, degraded: false });
      expect(await big.settle(1)).toMatchObject({ settled: true, charged: 1, limits: [{ remaining: 9_999 }] });
      const small = await l.reserve('s', { cost: 1 });
      expect(await small.settle(10_000)).toMatchObject({ settled: true, charged: 10_000, limits: [{ remaining: 0 }] });
      // 10,001 entries in the window: one more than the limit, so the oldest must leave before one more fits.
      await expectDecision('in debt by one', l.peek('s'), { allowed: false, remaining: 0, retryAfterMs: 60_000 });
    },
  },
  ...(['token-bucket', 'gcra'] as const).map(
    (algorithm): Scenario => ({
      name: `${algorithm}: a refund after a refill stops at the burst`,
      async run(ctx) {
        const l = ctx.limiter(five(algorithm));
        const at = await charged(ctx, l, 's', 5, { remaining: 0 });
        ctx.clock.advance(2000); // 2 units back by refill
        await expectDecision('refilled 2', l.peek('s'), { allowed: true, remaining: 1 });
        await refunded(l, 's', at, 5);
        await expectDecision('full, not 7', l.peek('s'), { allowed: true, remaining: 4, resetMs: 1000 });
        await expectDecision('the burst', l.consume('s', { cost: 5 }), { allowed: true, remaining: 0 });
        await expectDecision('and no more', l.consume('s'), { allowed: false, remaining: 0 });
      },
    }),
  ),
  {
    name: 'lock-out: from the `after`-th refused consume the subject is locked out, doubling up to maxMs; no charge and no strike while locked; strikes forgotten after forgetMs; reset clears it',
    async run(ctx) {
      const lockout = { after: 2, baseMs: 10_000, maxMs: 35_000, forgetMs: '1h' } as const;
      const l = ctx.limiter({ algorithm: 'token-bucket', burst: 1, refillPerSecond: 1, lockout });
      await expectDecision('admitted', l.consume('s'), { allowed: true, reason: 'allowed' });
      await expectDecision('strike 1: limited', l.consume('s'), { allowed: false, reason: 'limited', retryAfterMs: 1000 });
      await expectDecision('strike 2: locked 10 s', l.consume('s'), { allowed: false, reason: 'locked', retryAfterMs: 10_000 });
      await expectDecision('locked: no new strike', l.consume('s'), { allowed: false, reason: 'locked', retryAfterMs: 10_000 });
      await expectDecision('peek sees the lock', l.peek('s'), { allowed: false, reason: 'locked', retryAfterMs: 10_000, remaining: 0 });
      ctx.clock.advance(9_999);
      await expectDecision('1 ms left (the bucket is full: nothing was charged)', l.consume('s'), { allowed: false, reason: 'locked', retryAfterMs: 1, remaining: 1 });
      ctx.clock.advance(1);
      await expectDecision('the lock ended', l.consume('s'), { allowed: true });
      await expectDecision('strike 3: locked 20 s', l.consume('s'), { allowed: false, reason: 'locked', retryAfterMs: 20_000 });
      ctx.clock.advance(20_000);
      await expectDecision('an admission does not forgive', l.consume('s'), { allowed: true });
      await expectDecision('strike 4: 40 s, capped at 35 s', l.consume('s'), { allowed: false, reason: 'locked', retryAfterMs: 35_000 });
      ctx.clock.advance(35_000);
      await expectDecision('after the cap', l.consume('s'), { allowed: true });
      await expectDecision('strike 5: still 35 s', l.consume('s'), { allowed: false, reason: 'locked', retryAfterMs: 35_000 });
      ctx.clock.advance(3_600_000); // an hour after the last strike: forgotten
      await expectDecision('forgotten', l.consume('s'), { allowed: true });
      await expectDecision('strike 1 again: limited', l.consume('s'), { allowed: false, reason: 'limited', retryAfterMs: 1000 });
      await expectDecision('strike 2: locked 10 s', l.consume('s'), { allowed: false, reason: 'locked', retryAfterMs: 10_000 });
      await l.reset('s');
      await expectDecision('reset clears the lock', l.consume('s'), { allowed: true });
      await expectDecision('and the strikes', l.consume('s'), { allowed: false, reason: 'limited' });
      // Another subject, another scope: their own strikes.
      await expectDecision('another subject', l.consume('t'), { allowed: true });
      await expectDecision('another scope', l.consume('s', { scope: 'other' }), { allowed: true });
    },
  },
  {
    name: 'lock-out with several limits: a strike is any refusal by the limits, and while locked nothing is charged to any of them',
    async run(ctx) {
      const l = ctx.limiter({ limits: [per('short', 'fixed-window', 2, 10_000), per('hour', 'sliding-window-log', 5, 3_600_000)], lockout: { after: 1, baseMs: 60_000 } });
      await expectDecision('1', l.consume('s'), { allowed: true });
      await expectDecision('2', l.consume('s'), { allowed: true });
      const d = await expectDecision('strike 1 locks (after 1)', l.consume('s'), { allowed: false, reason: 'locked', retryAfterMs: 60_000 });
      expect(limitOf(d, 'short')).toMatchObject({ allowed: false, retryAfterMs: 10_000 });
      ctx.clock.advance(60_000);
      const after = await expectDecision('the lock ended', l.consume('s'), { allowed: true });
      expect([limitOf(after, 'short').remaining, limitOf(after, 'hour').remaining]).toEqual([1, 2]);
    },
  },
  {
    name: 'a refund gives back to every limit of the subject (fixed-window 10 per 10 s + token-bucket 25 per hour)',
    async run(ctx) {
      const l = ctx.limiter({ limits: [per('short', 'fixed-window', 10, 10_000), per('hour', 'token-bucket', 25, 3_600_000)] });
      const at = await charged(ctx, l, 's', 8);
      await charged(ctx, l, 's', 2);
      await refunded(l, 's', at, 8);
      const d = await expectDecision('both back', l.peek('s', { cost: 0 }), { allowed: true });
      expect([limitOf(d, 'short').remaining, limitOf(d, 'hour').remaining]).toEqual([8, 23]);
    },
  },
  ...ALL.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: the limit is reached exactly, then denied; remaining, resetMs and retryAfterMs exact`,
      async run(ctx) {
        const l = ctx.limiter(five(algorithm));
        const want = EXHAUST[algorithm];
        for (let k = 1; k <= 5; k++) {
          await expectDecision(`request ${k}`, l.consume('s'), { allowed: true, reason: 'allowed', remaining: 5 - k, resetMs: want.reset(k), retryAfterMs: 0 });
        }
        for (const label of ['request 6', 'request 7']) {
          await expectDecision(label, l.consume('s'), { allowed: false, reason: 'limited', remaining: 0, resetMs: want.deniedReset, retryAfterMs: want.retry });
        }
        expect(await expectExactRetry(ctx, l, 's', 1, 'after the limit')).toBe(want.retry);
        await expectDecision('request at retry', l.consume('s'), { allowed: true });
      },
    }),
  ),
  ...ALL.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: a cost larger than what remains is denied and consumes nothing`,
      async run(ctx) {
        const l = ctx.limiter(five(algorithm));
        await expectDecision('cost 3', l.consume('s', { cost: 3 }), { allowed: true, remaining: 2 });
        const denied = { allowed: false, reason: 'limited' as const, remaining: 2, ...OVERDRAW[algorithm] };
        await expectDecision('cost 3 with 2 left', l.consume('s', { cost: 3 }), denied);
        await expectDecision('again: the denial changed nothing', l.consume('s', { cost: 3 }), denied);
        await expectDecision('cost 2 fits exactly', l.consume('s', { cost: 2 }), { allowed: true, remaining: 0 });
        await expectDecision('then 1 more', l.consume('s'), { allowed: false, remaining: 0 });
      },
    }),
  ),
  ...ALL.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: a cost above the limit is never admitted (retryAfterMs -1) and consumes nothing, cost 0 is free`,
      async run(ctx) {
        const l = ctx.limiter(five(algorithm));
        await expectDecision('cost 6 via the limiter', l.consume('s', { cost: 6 }), { allowed: false, reason: 'cost-exceeds-limit', retryAfterMs: -1, remaining: 5 });
        // The limiter only peeks such a cost; the store must refuse it in consume mode too.
        const keys = l.options.limits.map((limit) => `${subjectKey(l.options.prefix, '', 's')}:${limit.keySuffix}`);
        const direct = await ctx.store.evaluate({ keys, limits: l.options.limits.map((x) => x.store), cost: 6, mode: 'consume' });
        expect(direct).toEqual({ at: ctx.clock.now(), allowed: false, results: [expect.objectContaining({ allowed: false, remaining: 5, retryAfterMs: -1 })] });
        await expectDecision('cost 0', l.consume('s', { cost: 0 }), { allowed: true, remaining: 5 });
        await expectDecision('cost 5: nothing was taken', l.consume('s', { cost: 5 }), { allowed: true, remaining: 0 });
        await expectDecision('cost 0 when empty', l.consume('s', { cost: 0 }), { allowed: true, remaining: 0 });
        await expectDecision('cost 1 when empty', l.consume('s'), { allowed: false, remaining: 0 });
      },
    }),
  ),
  ...ALL.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: peek never consumes`,
      async run(ctx) {
        const l = ctx.limiter(five(algorithm));
        for (let i = 0; i < 8; i++) await expectDecision(`peek ${i}`, l.peek('s'), { allowed: true, remaining: 4 });
        for (let k = 1; k <= 5; k++) await expectDecision(`consume ${k}`, l.consume('s'), { allowed: true, remaining: 5 - k });
        await expectDecision('consume 6', l.consume('s'), { allowed: false });
        await expectDecision('peek when empty', l.peek('s'), { allowed: false, remaining: 0 });
      },
    }),
  ),
  ...ALL.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: retryAfterMs is exact along an irregular walk (odd windows and rates)`,
      async run(ctx) {
        const l = ctx.limiter(ODD[algorithm]);
        ctx.clock.advance(337); // not on a window edge
        const costs = [2, 1, 1, 3, 1, 2, 2, 4, 3, 1, 1, 2];
        const gaps = [0, 0, 1, 0, 137, 0, 1, 0, 333, 0, 59, 0];
        let denials = 0;
        for (let i = 0; i < costs.length; i++) {
          ctx.clock.advance(gaps[i]);
          const d = await l.consume('s', { cost: costs[i] });
          expect(d.degraded).toBe(false);
          if (!d.allowed) {
            denials++;
            await expectExactRetry(ctx, l, 's', costs[i], `step ${i} (cost ${costs[i]})`);
            await expectDecision(`step ${i} at retry`, l.consume('s', { cost: costs[i] }), { allowed: true });
          }
        }
        expect(denials).toBeGreaterThanOrEqual(3);
      },
    }),
  ),
  ...EXTREME.map(
    ({ label, options, unitMs }): Scenario => ({
      name: `retryAfterMs is exact at extreme parameters: ${label}`,
      async run(ctx) {
        const l = ctx.limiter(options);
        const limit = l.options.limits[0].limit;
        // Costs and gaps as fractions of the limit and of the time one unit takes to come back.
        const costs = [0.91, 0.69, 0.3, 1, 0.5, 0.77, 0.13, 1];
        const gaps = [0, 0.37, 0, 1.3, 0, 0.61, 0, 0];
        let denials = 0;
        for (let i = 0; i < costs.length; i++) {
          ctx.clock.advance(Math.round(gaps[i] * unitMs));
          const cost = Math.max(1, Math.round(costs[i] * limit));
          const d = await l.consume('s', { cost });
          expect(d.degraded).toBe(false);
          if (!d.allowed) {
            denials++;
            await expectExactRetry(ctx, l, 's', cost, `step ${i} (cost ${cost})`);
            await expectDecision(`step ${i} at retry`, l.consume('s', { cost }), { allowed: true });
          }
        }
        expect(denials).toBeGreaterThanOrEqual(2);
      },
    }),
  ),
  {
    name: 'fixed-window admits 2x the limit in a span straddling a window boundary',
    async run(ctx) {
      const l = ctx.limiter({ algorithm: 'fixed-window', limit: 5, windowMs: 60_000 });
      ctx.clock.advance(59_000);
      for (let k = 1; k <= 5; k++) await expectDecision(`late in window 1: ${k}`, l.consume('s'), { allowed: true, remaining: 5 - k, resetMs: 1000 });
      await expectDecision('late in window 1: 6', l.consume('s'), { allowed: false, retryAfterMs: 1000 });
      ctx.clock.advance(1000);
      for (let k = 1; k <= 5; k++) await expectDecision(`start of window 2: ${k}`, l.consume('s'), { allowed: true, remaining: 5 - k, resetMs: 60_000 });
      await expectDecision('start of window 2: 6', l.consume('s'), { allowed: false, retryAfterMs: 60_000 });
      // 10 admitted within 1001 ms, inside one window-long span.
    },
  },
  {
    name: 'sliding-window-log admits exactly the limit in any window-long span, straddling or not',
    async run(ctx) {
      const l = ctx.limiter({ algorithm: 'sliding-window-log', limit: 5, windowMs: 60_000 });
      ctx.clock.advance(59_000);
      for (let k = 1; k <= 5; k++) await expectDecision(`late in window 1: ${k}`, l.consume('s'), { allowed: true, remaining: 5 - k, resetMs: 60_000 });
      ctx.clock.advance(1000);
      await expectDecision('a window edge changes nothing', l.consume('s'), { allowed: false, remaining: 0, resetMs: 59_000, retryAfterMs: 59_000 });
      expect(await expectExactRetry(ctx, l, 's', 5, 'all five leave together')).toBe(59_000);
      for (let k = 1; k <= 5; k++) await expectDecision(`60 s after the first five: ${k}`, l.consume('s'), { allowed: true, remaining: 5 - k });
    },
  },
  {
    name: 'sliding-window-log stays exact when the clock steps back onto a ms it already wrote',
    async run(ctx) {
      const l = ctx.limiter({ algorithm: 'sliding-window-log', limit: 4, windowMs: 1000 });
      await expectDecision('T0: two units', l.consume('s', { cost: 2 }), { allowed: true, remaining: 2 });
      ctx.clock.advance(600);
      await expectDecision('T0+600: one', l.consume('s'), { allowed: true, remaining: 1 });
      ctx.clock.advance(400);
      // The two units of T0 leave the window and are pruned; one unit at T0+1000 replaces them.
      await expectDecision('T0+1000: one', l.consume('s'), { allowed: true, remaining: 2 });
      ctx.clock.back(400);
      // Back at T0+600: its unit and the one from T0+1000 (now in the future) are in the window.
      // Names built from the time would reuse a name here, and each admission would overwrite one.
      await expectDecision('stepped back to T0+600: 3rd in window', l.consume('s'), { allowed: true, remaining: 1 });
      await expectDecision('stepped back to T0+600: 4th in window', l.consume('s'), { allowed: true, remaining: 0 });
      await expectDecision('stepped back to T0+600: 5th denied', l.consume('s'), { allowed: false, remaining: 0, resetMs: 1400, retryAfterMs: 1000 });
      await expectDecision('stepped back to T0+600: still denied', l.consume('s'), { allowed: false, remaining: 0 });
    },
  },
  {
    name: 'sliding-window-log: a request of cost 0 writes nothing, so a clock step back finds every unit it left',
    async run(ctx) {
      const l = ctx.limiter({ algorithm: 'sliding-window-log', limit: 3, windowMs: 1000 });
      await expectDecision('T0: one', l.consume('s'), { allowed: true, remaining: 2 });
      ctx.clock.advance(400);
      await expectDecision('T0+400: one (the key now lives until T0+1400)', l.consume('s'), { allowed: true, remaining: 1 });
      ctx.clock.advance(600);
      await expectDecision('T0+1000, cost 0: the unit of T0 has left', l.consume('s', { cost: 0 }), { allowed: true, remaining: 2, resetMs: 400 });
      ctx.clock.back(500);
      // At T0+500 the unit of T0 is in the window again: cost 0 must not have pruned it.
      await expectDecision('stepped back to T0+500: cost 2 denied', l.consume('s', { cost: 2 }), { allowed: false, remaining: 1, resetMs: 900, retryAfterMs: 500 });
      await expectDecision('stepped back to T0+500: cost 1 admitted', l.consume('s'), { allowed: true, remaining: 0 });
    },
  },
  {
    name: 'sliding-window-log and fixed-window under random arrivals: each admits exactly by its own rule',
    async run(ctx) {
      const win = 60_000;
      const cap = 5;
      const log = ctx.limiter({ algorithm: 'sliding-window-log', limit: cap, windowMs: win });
      const fixed = ctx.limiter({ algorithm: 'fixed-window', limit: cap, windowMs: win });
      const rnd = prng(20240607);
      const logAdmitted: number[] = [];
      const fixedAdmitted: number[] = [];
      for (let i = 0; i < 250; i++) {
        ctx.clock.advance(rnd.chance(0.2) ? 0 : rnd.int(1, 2500));
        const t = ctx.clock.now();
        const [a, b] = await Promise.all([log.consume('s'), fixed.consume('s')]);
        expect([a.degraded, b.degraded]).toEqual([false, false]);
        // sliding-window-log: admitted iff fewer than cap were admitted in (t - win, t].
        const inLog = logAdmitted.filter((x) => x > t - win).length;
        expect({ i, t, allowed: a.allowed }).toEqual({ i, t, allowed: inLog < cap });
        if (a.allowed) logAdmitted.push(t);
        // fixed-window: admitted iff fewer than cap were admitted in t's window.
        const inWindow = fixedAdmitted.filter((x) => Math.floor(x / win) === Math.floor(t / win)).length;
        expect({ i, t, allowed: b.allowed }).toEqual({ i, t, allowed: inWindow < cap });
        if (b.allowed) fixedAdmitted.push(t);
      }
      const busiest = (times: number[]) => Math.max(...times.map((s) => times.filter((x) => x >= s && x < s + win).length));
      expect(busiest(logAdmitted)).toBe(cap);
      expect(logAdmitted.length).toBeGreaterThanOrEqual(4 * cap); // the run covers several windows
      expect(busiest(fixedAdmitted)).toBeLessThanOrEqual(2 * cap);
    },
  },
  {
    name: 'sliding-window-counter interpolates the previous window (exact values)',
    async run(ctx) {
      const l = ctx.limiter({ algorithm: 'sliding-window-counter', limit: 10, windowMs: 60_000 });
      await expectDecision('8 at T0', l.consume('a', { cost: 8 }), { allowed: true, remaining: 2, resetMs: 120_000 });
      ctx.clock.advance(75_000); // 15 s into the next window: 8 * 0.75 = 6 still count
      await expectDecision('peek at 25%', l.peek('a'), { allowed: true, remaining: 3, resetMs: 105_000 });
      // Nothing left: the reset is when the next unit is back (8 * (1 - e / 60000) + 4 <= 9 at e = 22500), as the denial's retry below.
      await expectDecision('4 fit exactly (6 + 4)', l.consume('a', { cost: 4 }), { allowed: true, remaining: 0, resetMs: 7500 });
      // 8 * (1 - e / 60000) + 4 + 1 <= 10 at e = 22500: 7500 ms from now.
      await expectDecision('one more', l.consume('a'), { allowed: false, remaining: 0, resetMs: 105_000, retryAfterMs: 7500 });
      expect(await expectExactRetry(ctx, l, 'a', 1, 'interpolated')).toBe(7500);
      // 8 * (1 - e / 60000) + 5 <= 9 at e = 30000: 7500 ms on.
      await expectDecision('at 37.5%: 5 + 4 + 1', l.consume('a'), { allowed: true, remaining: 0, resetMs: 7500 });
    },
  },
  {
    name: 'sliding-window-counter with a fractional estimate, and a window two back forgotten',
    async run(ctx) {
      const l = ctx.limiter({ algorithm: 'sliding-window-counter', limit: 10, windowMs: 60_000 });
      await expectDecision('8 at T0', l.consume('s', { cost: 8 }), { allowed: true, remaining: 2 });
      ctx.clock.advance(80_000); // 20 s into the next window: 8 * 40000 / 60000 = 5.333 still count
      await expectDecision('peek', l.peek('s'), { allowed: true, remaining: 3, resetMs: 100_000 });
      // 5.333 + 5 > 10; room 5 -> 8 * (1 - e / 60000) <= 5 at e = 22500: 2500 ms from now.
      await expectDecision('cost 5', l.consume('s', { cost: 5 }), { allowed: false, remaining: 4, resetMs: 40_000, retryAfterMs: 2500 });
      // 9.333 leaves nothing whole: the next unit is back when 8 * (1 - e / 60000) <= 5, at e = 22500.
      await expectDecision('cost 4 fits (9.333)', l.consume('s', { cost: 4 }), { allowed: true, remaining: 0, resetMs: 2500 });
      ctx.clock.advance(120_000); // two windows on: both counts are forgotten
      await expectDecision('fresh', l.peek('s'), { allowed: true, remaining: 9, resetMs: 100_000 });
      await expectDecision('10 fit again', l.consume('s', { cost: 10 }), { allowed: true, remaining: 0 });
    },
  },
  {
    name: 'token-bucket: the burst, then refill at the rate (exact values)',
    async run(ctx) {
      const l = ctx.limiter({ algorithm: 'token-bucket', burst: 5, refillPerSecond: 2 });
      for (let k = 1; k <= 5; k++) await expectDecision(`burst ${k}`, l.consume('s'), { allowed: true, remaining: 5 - k, resetMs: k * 500 });
      await expectDecision('burst spent', l.consume('s'), { allowed: false, remaining: 0, resetMs: 2500, retryAfterMs: 500 });
      ctx.clock.advance(499);
      await expectDecision('0.998 tokens', l.peek('s'), { allowed: false, remaining: 0, retryAfterMs: 1 });
      ctx.clock.advance(1);
      await expectDecision('one token after 500 ms', l.consume('s'), { allowed: true, remaining: 0, resetMs: 2500 });
      ctx.clock.advance(1250); // 2.5 tokens
      await expectDecision('2.5 tokens', l.peek('s'), { allowed: true, remaining: 1, resetMs: 1750 });
      await expectDecision('take 2', l.consume('s', { cost: 2 }), { allowed: true, remaining: 0, resetMs: 2250 });
      await expectDecision('0.5 left', l.consume('s'), { allowed: false, remaining: 0, resetMs: 2250, retryAfterMs: 250 });
      ctx.clock.advance(3_600_000); // refill stops at the burst
      await expectDecision('full after an hour', l.peek('s'), { allowed: true, remaining: 4, resetMs: 500 });
      await expectDecision('the whole burst', l.consume('s', { cost: 5 }), { allowed: true, remaining: 0, resetMs: 2500 });
      await expectDecision('and no more', l.consume('s'), { allowed: false, retryAfterMs: 500 });
    },
  },
  {
    name: 'gcra: the burst, then one per emission interval (exact values)',
    async run(ctx) {
      const l = ctx.limiter({ algorithm: 'gcra', burst: 5, refillPerSecond: 2 }); // emission interval 500 ms
      for (let k = 1; k <= 5; k++) await expectDecision(`burst ${k}`, l.consume('s'), { allowed: true, remaining: 5 - k, resetMs: k * 500 });
      await expectDecision('burst spent', l.consume('s'), { allowed: false, remaining: 0, resetMs: 2500, retryAfterMs: 500 });
      for (let i = 0; i < 4; i++) {
        ctx.clock.advance(499);
        await expectDecision(`interval ${i}: 1 ms early`, l.peek('s'), { allowed: false, remaining: 0, retryAfterMs: 1 });
        ctx.clock.advance(1);
        await expectDecision(`interval ${i}: on time`, l.consume('s'), { allowed: true, remaining: 0, resetMs: 2500 });
        await expectDecision(`interval ${i}: one more`, l.consume('s'), { allowed: false, retryAfterMs: 500 });
      }
      ctx.clock.advance(1250); // 2.5 intervals
      await expectDecision('after 1250 ms: 1st', l.consume('s'), { allowed: true, remaining: 1, resetMs: 1750 });
      await expectDecision('after 1250 ms: 2nd', l.consume('s'), { allowed: true, remaining: 0, resetMs: 2250 });
      await expectDecision('after 1250 ms: 3rd', l.consume('s'), { allowed: false, remaining: 0, resetMs: 2250, retryAfterMs: 250 });
      ctx.clock.advance(3_600_000);
      await expectDecision('the whole burst again', l.consume('s', { cost: 5 }), { allowed: true, remaining: 0, resetMs: 2500 });
    },
  },
  {
    name: 'gcra with an emission interval that is not a whole ms (3/s): burst, then every 333.333 ms',
    async run(ctx) {
      // A burst of 30 (10 s of the rate): the key's TTL is real time on Redis, and a burst of 3 (1 s)
      // let the key expire between two steps of the test clock on a loaded machine (load 25, the HTTP store).
      const l = ctx.limiter({ algorithm: 'gcra', burst: 30, refillPerSecond: 3 });
      await expectDecision('burst', l.consume('s', { cost: 30 }), { allowed: true, remaining: 0, resetMs: 10_000 });
      // TAT = T0 + 10,000 ms: the next unit fits at T0 + 333.333 ms, i.e. after 334 whole ms.
      await expectDecision('spent', l.consume('s'), { allowed: false, retryAfterMs: 334 });
      const admittedAt: number[] = [];
      for (let i = 0; i < 9; i++) {
        await expectExactRetry(ctx, l, 's', 1, `unit ${i}`);
        await expectDecision(`unit ${i}`, l.consume('s'), { allowed: true });
        admittedAt.push(ctx.clock.now() - T0);
      }
      // 9 units at 3/s: the k-th fits at ceil(k * 333.333) ms.
      expect(admittedAt).toEqual([334, 667, 1000, 1334, 1667, 2000, 2334, 2667, 3000]);
    },
  },
  {
    name: 'gcra at high rates (1e6/s, 50,000,000/min, 123,456.7/s): admitted within 0.1% of burst + rate x time',
    // About 1,300 store calls (432 per rate, in order): 12-23 s on the Durable Object store on a loaded machine, past the default 30 s on a busier one.
    timeoutMs: 180_000,
    async run(ctx) {
      // A whole-microsecond emission interval admitted 20% too many at 50,000,000/min (1.2 us -> 1 us).
      // A burst of 10 s of each rate: the key's TTL (real time on Redis) must outlive each step's real
      // time, and a burst of 1 s at 1e6/s did not at load 25 (the HTTP store: the key expired between a
      // draw and the check after it). 0.1% of burst + rate x time still tells a 1.1% error in the rate.
      const runs = [1_000_000, 50_000_000 / 60, 123_456.7].map((rate, i) => ({
        rate,
        burst: Math.round(rate * 10),
        key: `hr${i}`,
        l: ctx.limiter({ algorithm: 'gcra', burst: Math.round(rate * 10), refillPerSecond: rate }),
        admitted: 0,
      }));
      const start = ctx.clock.now();
      // Every 7 ms, take all there is: what `remaining` says must be admitted, in one draw. The three
      // rates side by side on keys of their own (one clock, advanced once a step), each in its order.
      for (let step = 0; step <= 143; step++) {
        await Promise.all(
          runs.map(async (r) => {
            const { remaining } = await r.l.peek(r.key, { cost: 0 });
            if (remaining !== null && remaining > 0) {
              await expectDecision(`rate ${r.rate}, step ${step}`, r.l.consume(r.key, { cost: remaining }), { allowed: true });
              r.admitted += remaining;
            }
            await expectDecision(`rate ${r.rate}, step ${step}: then nothing`, r.l.consume(r.key), { allowed: false });
          }),
        );
        if (step < 143) ctx.clock.advance(7);
      }
      for (const r of runs) {
        const ideal = r.burst + (r.rate * (ctx.clock.now() - start)) / 1000;
        expect(r.admitted).toBeLessThanOrEqual(ideal + 1);
        expect(Math.abs(r.admitted - ideal) / ideal).toBeLessThan(0.001);
      }
    },
  },
  ...PAIRS.map(
    ([a, b]): Scenario => ({
      name: `all-or-nothing multi-limit (${a} 10 per 10 s + ${b} 25 per hour): if either denies, neither is consumed`,
      async run(ctx) {
        const l = ctx.limiter({ limits: [per('short', a, 10, 10_000), per('hour', b, 25, 3_600_000)] });
        for (let k = 1; k <= 10; k++) {
          const d = await expectDecision(`at 0 s: ${k}`, l.consume('s'), { allowed: true });
          expect(limitOf(d, 'hour').remaining).toBe(25 - k);
        }
        let d = await expectDecision('11th: the short limit denies', l.consume('s'), { allowed: false, policy: 'short' });
        expect(limitOf(d, 'hour')).toMatchObject({ allowed: true, remaining: 15 });
        ctx.clock.advance(20_000); // two short windows: every short algorithm is full again
        d = await expectDecision('cost 10, 20 s later', l.consume('s', { cost: 10 }), { allowed: true });
        expect([limitOf(d, 'short').remaining, limitOf(d, 'hour').remaining]).toEqual([0, 5]);
        ctx.clock.advance(20_000); // two short windows: every short algorithm is full again
        d = await expectDecision('cost 6: the hour denies', l.consume('s', { cost: 6 }), { allowed: false, policy: 'hour' });
        expect(limitOf(d, 'short')).toMatchObject({ allowed: true, remaining: 10 });
        d = await expectDecision('cost 5: the short limit was not charged for the denial', l.consume('s', { cost: 5 }), { allowed: true });
        expect([limitOf(d, 'short').remaining, limitOf(d, 'hour').remaining]).toEqual([5, 0]);
        d = await expectDecision('cost 1: the hour denies again', l.consume('s'), { allowed: false, policy: 'hour' });
        expect(limitOf(d, 'short')).toMatchObject({ allowed: true, remaining: 5 });
      },
    }),
  ),

  {
    name: 'concurrency: `limit` leases in flight; a denial charges no rate limit and waits min(1 s, the earliest expiry); release and expiry free slots',
    async run(ctx) {
      const l = ctx.limiter({ limit: 100, windowMs: 60_000, concurrency: { limit: 3, leaseMs: 10_000 } });
      const held: NonNullable<Decision['lease']>[] = [];
      for (let k = 1; k <= 3; k++) {
        const d = await expectDecision(`lease ${k}`, l.consume('s'), { allowed: true, policy: 'default', remaining: 100 - k });
        expect(limitOf(d, 'concurrency')).toMatchObject({ allowed: true, remaining: 3 - k, quotaUnit: 'concurrent-requests' });
        expect(d.lease?.token).toMatch(/^L/);
        held.push(d.lease!);
      }
      let d = await expectDecision('4th in flight', l.consume('s'), { allowed: false, reason: 'limited', policy: 'concurrency', remaining: 0, retryAfterMs: 1000 });
      expect(d.lease).toBeUndefined();
      expect(limitOf(d, 'default')).toMatchObject({ allowed: true, remaining: 97 });
      expect(await held[0].release()).toBe(true);
      expect(await held[0].release()).toBe(false); // once only
      ctx.clock.advance(1_000);
      d = await expectDecision('after a release, 1 s later', l.consume('s'), { allowed: true, remaining: 96 });
      held.push(d.lease!);
      await expectDecision('full again', l.peek('s'), { allowed: false, policy: 'concurrency' });
      // The two leases left from T0 expire at T0 + 10 s: 9.6 s in, the earliest is 400 ms away.
      ctx.clock.advance(8_600);
      await expectDecision('the earliest lease 400 ms from its expiry', l.peek('s'), { allowed: false, policy: 'concurrency', retryAfterMs: 400 });
      ctx.clock.advance(400);
      // The holders of the T0 leases never released them (a crashed instance): expired, they free two slots.
      d = await expectDecision('two leases expired', l.consume('s', { cost: 2 }), { allowed: true, remaining: 94 });
      held.push(d.lease!);
      await expectDecision('the lease from T0 + 1 s still held', l.peek('s'), { allowed: false, policy: 'concurrency' });
      for (const lease of held) await lease.release();
    },
  },
  {
    name: 'concurrency composes all-or-nothing with a rate limit: a rate denial takes no slot, a slot denial takes no unit; cost takes that many slots',
    async run(ctx) {
      const l = ctx.limiter({ limit: 2, windowMs: 60_000, concurrency: { limit: 3, leaseMs: 10_000 } });
      const a = await expectDecision('1', l.consume('s'), { allowed: true });
      const b = await expectDecision('2', l.consume('s'), { allowed: true, remaining: 0 });
      let d = await expectDecision('3: the rate limit denies', l.consume('s'), { allowed: false, policy: 'default' });
      expect(limitOf(d, 'concurrency')).toMatchObject({ allowed: true, remaining: 1 });
      expect(d.lease).toBeUndefined();
      await a.lease!.release();
      d = await expectDecision('peek after a release', l.peek('s'), { allowed: false, policy: 'default' });
      expect(limitOf(d, 'concurrency')).toMatchObject({ allowed: true, remaining: 2 });
      const m = ctx.limiter({ limit: 10, windowMs: 60_000, concurrency: { limit: 3, leaseMs: 10_000 } });
      const two = await expectDecision('cost 2', m.consume('t', { cost: 2 }), { allowed: true, remaining: 8 });
      d = await expectDecision('cost 2 more: one slot left', m.consume('t', { cost: 2 }), { allowed: false, policy: 'concurrency', remaining: 1 });
      expect(limitOf(d, 'default')).toMatchObject({ allowed: true, remaining: 8 });
      await expectDecision('cost 4 never fits 3 slots', m.consume('t', { cost: 4 }), { allowed: false, reason: 'cost-exceeds-limit', retryAfterMs: -1 });
      await two.lease!.release();
      const three = await expectDecision('cost 3 after the release', m.consume('t', { cost: 3 }), { allowed: true, remaining: 5 });
      await three.lease!.release();
      await b.lease!.release();
    },
  },
  {
    name: 'concurrency: a renewal runs a held lease leaseMs from now again; an expired lease is not brought back; the reply counts what is held',
    async run(ctx) {
      const l = ctx.limiter({ limit: 100, windowMs: 60_000, concurrency: { limit: 2, leaseMs: 10_000 } });
      const a = await expectDecision('a', l.consume('s'), { allowed: true });
      ctx.clock.advance(5_000);
      const b = await expectDecision('b', l.consume('s'), { allowed: true });
      const key = `${subjectKey(l.options.prefix, '', 's')}:concurrency.cc`;
      const limits = [{ algorithm: 'concurrency' as const, capacity: 2, leaseMs: 10_000 }];
      ctx.clock.advance(4_000); // a expires at T0 + 10 s, b at T0 + 15 s
      const renewed = await ctx.store.evaluate({ keys: [key], limits, cost: 1, mode: 'renew', token: a.lease!.token });
      expect(renewed.results[0]).toMatchObject({ allowed: true, remaining: 0 });
      ctx.clock.advance(2_000); // T0 + 11 s: a renewed until T0 + 19 s, so still held
      await expectDecision('a renewed, b held', l.peek('s'), { allowed: false, policy: 'concurrency' });
      ctx.clock.advance(5_000); // T0 + 16 s: b expired
      const late = await ctx.store.evaluate({ keys: [key], limits, cost: 1, mode: 'renew', token: b.lease!.token });
      expect(late.results[0]).toMatchObject({ allowed: true, remaining: 1 });
      const c = await expectDecision('b is not brought back', l.consume('s'), { allowed: true });
      const released = await ctx.store.evaluate({ keys: [key], limits, cost: 1, mode: 'release', token: a.lease!.token });
      expect(released.results[0]).toMatchObject({ allowed: true, remaining: 1 });
      for (const lease of [a.lease, b.lease, c.lease]) await lease?.release();
    },
  },
  {
    // Issue 40, row 3: a lease of 4,000 slots or more made the script fail (Lua's unpack of 2 x cost values).
    name: 'concurrency: leases of 4,000, 10,000 (the most one request takes) and 7,999 slots decided exactly, renewed and released; 10,001 refused as never admissible',
    async run(ctx) {
      const l = ctx.limiter({ limit: 1_000_000, windowMs: 60_000, concurrency: { limit: 50_000, leaseMs: 10_000 } });
      const slots = (d: Decision) => limitOf(d, 'concurrency');
      const a = await expectDecision('cost 4,000', l.consume('s', { cost: 4_000 }), { allowed: true, remaining: 996_000 });
      expect(slots(a)).toMatchObject({ allowed: true, remaining: 46_000 });
      const b = await expectDecision('cost 10,000', l.consume('s', { cost: 10_000 }), { allowed: true, remaining: 986_000 });
      expect(slots(b)).toMatchObject({ allowed: true, remaining: 36_000 });
      const c = await expectDecision('cost 7,999', l.consume('s', { cost: 7_999 }), { allowed: true, remaining: 978_001 });
      expect(slots(c)).toMatchObject({ allowed: true, remaining: 28_001 });
      // Within the limit's 28,001 free slots, but above what one lease takes: refused, nothing charged.
      let d = await expectDecision('cost 10,001', l.consume('s', { cost: 10_001 }), { allowed: false, reason: 'cost-exceeds-limit', retryAfterMs: -1 });
      expect(slots(d)).toMatchObject({ allowed: false, remaining: 28_001 });
      d = await expectDecision('peek 10,001', l.peek('s', { cost: 10_001 }), { allowed: false, reason: 'cost-exceeds-limit' });
      expect(limitOf(d, 'default')).toMatchObject({ remaining: 978_001 });
      const key = `${subjectKey(l.options.prefix, '', 's')}:concurrency.cc`;
      const limits = [{ algorithm: 'concurrency' as const, capacity: 50_000, leaseMs: 10_000 }];
      ctx.clock.advance(6_000);
      const renewed = await ctx.store.evaluate({ keys: [key], limits, cost: 10_000, mode: 'renew', token: b.lease!.token });
      expect(renewed.results[0]).toMatchObject({ allowed: true, remaining: 28_001 });
      ctx.clock.advance(5_000); // T0 + 11 s: a and c expired, b renewed until T0 + 16 s
      d = await expectDecision('b alone held', l.peek('s'), { allowed: true });
      expect(slots(d)).toMatchObject({ remaining: 39_999 });
      const released = await ctx.store.evaluate({ keys: [key], limits, cost: 10_000, mode: 'release', token: b.lease!.token });
      expect(released.results[0]).toMatchObject({ allowed: true, remaining: 50_000 });
      // A release naming more slots than any lease holds gives back the lease's, and nothing more.
      const e = await expectDecision('cost 10,000 again', l.consume('s', { cost: 10_000 }), { allowed: true });
      const huge = await ctx.store.evaluate({ keys: [key], limits, cost: 1_000_000_000, mode: 'release', token: e.lease!.token });
      expect(huge.results[0]).toMatchObject({ allowed: true, remaining: 50_000 });
      // b's too, though the store released it above: its LeaseBook still holds it until its own
      // release, and would renew it every leaseMs / 3 after the file ends (on a closed client).
      for (const lease of [a.lease, b.lease, c.lease, e.lease]) await lease?.release();
    },
  },
  ...CALENDAR_SCENARIOS,
];
