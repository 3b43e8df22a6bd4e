// Header formatting and problem bodies: every dialect, degraded decisions, Retry-After jitter bounds.
import { bareDecision, toDecision, type Decision } from '../src/model/decision';
import { formatHeaders, retryAfterSeconds } from '../src/headers/format-headers';
import { problemDetails, QUOTA_EXCEEDED_TYPE } from '../src/headers/problem-details';
import { resolveLimiterOptions } from '../src/engine/options';
import { createLimiter, MemoryStore } from '../src';

const limits = resolveLimiterOptions({
  limits: [
    { name: 'burst', limit: 10, windowMs: 1_000 },
    { name: 'hourly', limit: 1000, windowMs: 3_600_000 },
  ],
}).limits;

/** burst: 3 left, resets in 400 ms; hourly: 900 left, resets in 30 min. */
const allowed = toDecision(limits, true, [
  { allowed: true, remaining: 3, resetMs: 400, retryAfterMs: 0 },
  { allowed: true, remaining: 900, resetMs: 1_800_000, retryAfterMs: 0 },
], 1);

const get = (pairs: [string, string][], name: string) => pairs.find(([n]) => n === name)?.[1];

describe('formatHeaders', () => {
  it('a pair reused while its number repeats never carries the last number once it changes (issue #44)', () => {
    const single = resolveLimiterOptions({ limit: 5, windowMs: 10_000 }).limits;
    const denial = (retryAfterMs: number, remaining = 0) => toDecision(single, false, [{ allowed: false, remaining, resetMs: retryAfterMs, retryAfterMs }], 1);
    const seen: (string | undefined)[][] = [];
    for (const [ms, left] of [[1_500, 0], [1_500, 0], [2_500, 1], [1_500, 0], [999, 0]] as const) {
      const pairs = formatHeaders(denial(ms, left), ['draft-6'], { retryAfterJitterMs: 0 });
      seen.push(['RateLimit-Remaining', 'RateLimit-Reset', 'Floodgate-Reset-Ms', 'Retry-After'].map((n) => get(pairs, n)));
    }
    expect(seen).toEqual([
      ['0', '2', '1500', '2'],
      ['0', '2', '1500', '2'],
      ['1', '3', '2500', '3'],
      ['0', '2', '1500', '2'],
      ['0', '1', '999', '1'],
    ]);
  });

  it('draft-6 describes the most restrictive limit, in delta seconds rounded up', () => {
    expect(formatHeaders(allowed, ['draft-6'])).toEqual([
      ['RateLimit-Limit', '10'],
      ['RateLimit-Remaining', '3'],
      ['RateLimit-Reset', '1'],
      ['Floodgate-Reset-Ms', '400'],
    ]);
  });

  it('draft-10 lists every policy with q, w, r and t (the adapters\' tables parse it with structured-headers)', () => {
    const pairs = formatHeaders(allowed, ['draft-10']);
    expect(pairs).toEqual([
      ['RateLimit-Policy', '"burst";q=10;w=1, "hourly";q=1000;w=3600'],
      ['RateLimit', '"burst";r=3;t=1;floodgate-t-ms=400, "hourly";r=900;t=1800;floodgate-t-ms=1800000'],
    ]);
  });

  it('omits w for a window that is not whole seconds (sub-second precision is not allowed)', () => {
    const gcra = resolveLimiterOptions({ algorithm: 'gcra', burst: 10, refillPerSecond: 3 }).limits;
    const d = toDecision(gcra, true, [{ allowed: true, remaining: 9, resetMs: 334, retryAfterMs: 0 }], 1);
    expect(get(formatHeaders(d, ['draft-10']), 'RateLimit-Policy')).toBe('"default";q=10');
  });

  it('draft-10 integers never exceed 15 digits (structured fields), even from a window options could not make', () => {
    // A custom store's decision, or the 1e15 s window token-bucket had at refillPerSecond 1e-14 before its range was checked.
    const huge = [{ ...limits[0], windowMs: 1e18 }];
    const d = toDecision(huge, true, [{ allowed: true, remaining: 3, resetMs: 1e20, retryAfterMs: 0 }], 1);
    const pairs = formatHeaders(d, ['draft-10']);
    expect(get(pairs, 'RateLimit-Policy')).toBe('"burst";q=10;w=999999999999999');
    expect(get(pairs, 'RateLimit')).toBe('"burst";r=3;t=999999999999999;floodgate-t-ms=999999999999999');
  });

  it('sends the reset to the ms beside the whole seconds: a floodgate-t-ms parameter on draft-10, one Floodgate-Reset-Ms field for draft-6 and legacy', () => {
    // A sliding window's next unit 183.2 ms away: t says 1 s, the ms say 184 (rounded up, never early).
    const swc = resolveLimiterOptions({ limit: 10, windowMs: 2_000 }).limits;
    const d = toDecision(swc, true, [{ allowed: true, remaining: 0, resetMs: 183.2, retryAfterMs: 0 }], 1);
    const pairs = formatHeaders(d, ['draft-6', 'draft-10', 'legacy'], { now: () => 1_700_000_000_000 });
    expect(get(pairs, 'RateLimit-Reset')).toBe('1');
    expect(get(pairs, 'RateLimit')).toBe('"default";r=0;t=1;floodgate-t-ms=184');
    // Once, whichever integer dialects are configured; never for draft-10 alone (its items carry it).
    expect(pairs.filter(([name]) => name === 'Floodgate-Reset-Ms')).toEqual([['Floodgate-Reset-Ms', '184']]);
    expect(get(formatHeaders(d, ['draft-10']), 'Floodgate-Reset-Ms')).toBeUndefined();
  });

  it('legacy sends X-RateLimit-Reset as a Unix time in seconds', () => {
    expect(formatHeaders(allowed, ['legacy'], { now: () => 1_700_000_000_000 })).toEqual([
      ['X-RateLimit-Limit', '10'],
      ['X-RateLimit-Remaining', '3'],
      ['X-RateLimit-Reset', '1700000001'],
      ['Floodgate-Reset-Ms', '400'],
    ]);
  });

  it('on a denial reports when quota the caller can use returns, so Retry-After is never earlier than the reset', () => {
    // A sliding window restores fully only after the previous window decays (up to two windows);
    // the caller can retry much sooner.
    const swc = resolveLimiterOptions({ limit: 5, windowMs: 60_000 }).limits;
    const denied = toDecision(swc, false, [{ allowed: false, remaining: 0, resetMs: 105_000, retryAfterMs: 12_300 }], 1);
    const pairs = formatHeaders(denied, ['draft-6', 'draft-10']);
    expect(get(pairs, 'RateLimit-Reset')).toBe('13');
    expect(get(pairs, 'RateLimit')).toBe('"default";r=0;t=13;floodgate-t-ms=12300');
    expect(get(pairs, 'Floodgate-Reset-Ms')).toBe('12300');
    expect(get(pairs, 'Retry-After')).toBe('13');
  });

  it('sends no quota headers for degraded decisions, and Retry-After only for denials', () => {
    expect(formatHeaders(bareDecision(true, 'fail-open'), ['draft-6', 'draft-10', 'legacy'])).toEqual([]);
    expect(formatHeaders(bareDecision(false, 'fail-closed', 2_500), ['draft-6'])).toEqual([['Retry-After', '3']]);
    const local: Decision = { ...allowed, degraded: true, reason: 'fail-local' };
    expect(formatHeaders(local, ['draft-6'])).toEqual([]);
  });

  it('never sends Retry-After for a cost that can never be admitted', () => {
    const never = toDecision(limits, false, [
      { allowed: false, remaining: 10, resetMs: 0, retryAfterMs: -1 },
      { allowed: true, remaining: 1000, resetMs: 0, retryAfterMs: 0 },
    ], 11);
    expect(never.reason).toBe('cost-exceeds-limit');
    expect(get(formatHeaders(never, ['draft-6']), 'Retry-After')).toBeUndefined();
  });
});

describe('retryAfterSeconds', () => {
  it('stays within [ceil(retry), ceil(retry + jitter)] and spreads over that range', () => {
    const seen = new Map<number, number>();
    for (let i = 0; i < 5_000; i++) {
      const s = retryAfterSeconds(12_300, 4_000);
      seen.set(s, (seen.get(s) ?? 0) + 1);
    }
    expect(Math.min(...seen.keys())).toBeGreaterThanOrEqual(13);
    expect(Math.max(...seen.keys())).toBeLessThanOrEqual(17);
    // 12.3 s + U[0, 4] s rounded up: 13 (0.7/4 of draws), 14, 15, 16 (1/4 each), 17 (0.3/4).
    for (const s of [13, 14, 15, 16, 17]) expect(seen.get(s) ?? 0).toBeGreaterThan(100);
  });

  it('adds jitter before rounding and is exact without it', () => {
    expect(retryAfterSeconds(12_300, 0)).toBe(13);
    expect(retryAfterSeconds(12_000, 1_000, () => 0)).toBe(12);
    expect(retryAfterSeconds(12_000, 1_000, () => 0.9999)).toBe(13);
    expect(retryAfterSeconds(0, 0)).toBe(1);
  });
});

describe('problemDetails', () => {
  it('names the violated policies of a limited decision', () => {
    const denied = toDecision(limits, false, [
      { allowed: false, remaining: 0, resetMs: 400, retryAfterMs: 400 },
      { allowed: true, remaining: 900, resetMs: 1_800_000, retryAfterMs: 0 },
    ], 1);
    expect(problemDetails(denied, 1, 2)).toEqual({
      type: QUOTA_EXCEEDED_TYPE,
      title: 'Quota Exceeded',
      status: 429,
      detail: 'Too many requests: retry in 2 seconds.',
      'violated-policies': ['burst'],
    });
  });

  it('says why a cost can never be admitted: the smallest limit, or the 10,000 slots one request may hold', async () => {
    const store = new MemoryStore();
    const wide = createLimiter({ store, limit: 1_000_000, windowMs: 60_000, concurrency: { limit: 50_000 } });
    const overLease = await wide.consume('s', { cost: 20_000 });
    expect(problemDetails(overLease, 20_000).detail).toBe(
      'This request costs 20000 units, more than the 10000 slots one request may hold at once: it can never be admitted, so retrying will not help.',
    );
    const narrow = createLimiter({ store, limit: 1_000_000, windowMs: 60_000, concurrency: { limit: 5 } });
    expect(problemDetails(await narrow.consume('s', { cost: 20_000 }), 20_000).detail).toMatch(/more than the limit of 5:/);
  });

  it('answers 503 for fail-closed', () => {
    expect(problemDetails(bareDecision(false, 'fail-closed', 1_000), 1, 1)).toMatchObject({ status: 503, title: 'Service Unavailable' });
  });
});
