// Conformance scenarios for subject overrides (issue #45): read in the decision's own store call, the same on MemoryStore and on Redis.
import type { Scenario } from './scenarios';

const allowedCount = (ds: readonly { allowed: boolean }[]) => ds.filter((d) => d.allowed).length;

export const OVERRIDE_SCENARIOS: readonly Scenario[] = [
  {
    name: 'override and shaping: a held request is held at the overridden rate; an override of 0 refuses a held request and reserves nothing',
    async run({ limiter }) {
      // Burst 4 at 4 per 100 s; overridden to burst 2 (rate scaled to 2 per 100 s): the third request
      // is held 50 s. (Slow, so that no key expires in real time between two calls of a loaded run.)
      const l = limiter({ algorithm: 'gcra', burst: 4, refillPerSecond: 0.04, overrides: true });
      await l.override('a', 2, { ttlMs: '1h' });
      expect(await l.consume('a', { maxDelayMs: 200_000 })).toMatchObject({ allowed: true, limit: 2 });
      expect(await l.consume('a', { maxDelayMs: 200_000 })).toMatchObject({ allowed: true, limit: 2 });
      const held = await l.consume('a', { maxDelayMs: 200_000 });
      expect(held).toMatchObject({ allowed: true, delayMs: 50_000, limit: 2 });
      await l.override('b', 0, { ttlMs: 60_000 });
      const refused = await l.consume('b', { maxDelayMs: 120_000 });
      expect(refused).toMatchObject({ allowed: false, limit: 0, remaining: 0 });
      expect(refused.delayMs).toBeUndefined();
      await l.clearOverride('b');
      // Nothing was reserved for b: its whole burst is there.
      expect(await l.consume('b')).toMatchObject({ allowed: true, remaining: 3 });
    },
  },
  {
    name: 'override: lowers then raises the limit in force at the next decision, other subjects untouched; clear restores',
    async run({ limiter }) {
      const l = limiter({ limit: 10, windowMs: 60_000, overrides: true });
      for (let i = 0; i < 3; i++) expect((await l.consume('a')).allowed).toBe(true);
      await l.override('a', 5, { ttlMs: '1h', reason: 'incident' });
      expect(await l.consume('a')).toMatchObject({ allowed: true, limit: 5, remaining: 1 });
      expect(await l.consume('a')).toMatchObject({ allowed: true, limit: 5, remaining: 0 });
      expect(await l.consume('a')).toMatchObject({ allowed: false, reason: 'limited', limit: 5 });
      expect(await l.consume('b')).toMatchObject({ allowed: true, limit: 10, remaining: 9 });
      await l.override('a', 20, { ttlMs: '1h' });
      expect(await l.consume('a')).toMatchObject({ allowed: true, limit: 20, remaining: 14 });
      const listed = await l.overrides();
      expect(listed).toHaveLength(1);
      expect(listed[0]).toMatchObject({ scope: '', limits: { default: 20 } });
      await l.clearOverride('a');
      expect(await l.consume('a')).toMatchObject({ allowed: true, limit: 10, remaining: 3 });
      expect(await l.overrides()).toEqual([]);
    },
  },
  {
    name: 'override: 0 refuses until it expires (retry is its time left), nothing counted; cleared, the count is as it was',
    async run({ limiter }) {
      const l = limiter({ limit: 10, windowMs: 60_000, overrides: true });
      expect((await l.consume('a')).allowed).toBe(true);
      await l.override('a', 0, { ttlMs: 60_000 });
      const d = await l.consume('a');
      expect(d).toMatchObject({ allowed: false, reason: 'limited', remaining: 0, limit: 0 });
      expect(d.retryAfterMs).toBeGreaterThan(0);
      expect(d.retryAfterMs).toBeLessThanOrEqual(60_000);
      await l.clearOverride('a');
      expect(await l.consume('a')).toMatchObject({ allowed: true, remaining: 8 });
    },
  },
  {
    name: 'override: one policy of several; a token bucket\'s refill scaled with its burst',
    async run({ limiter }) {
      const l = limiter({
        overrides: true,
        limits: [
          { name: 'burst', algorithm: 'token-bucket', burst: 10, refillPerSecond: 1 },
          { name: 'day', limit: 1000, windowMs: '1d' },
        ],
      });
      await l.override('a', { burst: 2 }, { ttlMs: '1h' });
      expect((await l.consume('a')).allowed).toBe(true);
      expect((await l.consume('a')).allowed).toBe(true);
      const denied = await l.consume('a');
      expect(denied).toMatchObject({ allowed: false, policy: 'burst' });
      // 2 of 10 per 10 s: 0.2 per second, one unit back in 5 s.
      expect(denied.retryAfterMs).toBe(5000);
      expect(denied.limits.find((x) => x.policy === 'day')).toMatchObject({ limit: 1000 });
    },
  },
  {
    name: 'override: several subjects decided in one call (coalesced), each with its own override or none',
    async run({ limiter }) {
      const l = limiter({ limit: 5, windowMs: 60_000, overrides: true });
      await l.override('a', 1, { ttlMs: '1h' });
      await l.override('c', 2, { ttlMs: '1h' });
      const all = await Promise.all(['a', 'b', 'c'].flatMap((s) => [0, 1, 2].map(() => l.consume(s).then((d) => [s, d] as const))));
      const of = (s: string) => all.filter(([x]) => x === s).map(([, d]) => d);
      expect([allowedCount(of('a')), allowedCount(of('b')), allowedCount(of('c'))]).toEqual([1, 3, 2]);
    },
  },
  {
    name: 'override: refused above limitCeiling when set, and for an unknown policy, a negative or fractional value',
    async run({ limiter }) {
      const l = limiter({ limit: 5, windowMs: 60_000, overrides: true, limitCeiling: 10 });
      await expect(l.override('a', 11, { ttlMs: '1h' })).rejects.toThrow(/limitCeiling/);
      await expect(l.override('a', { nope: 1 }, { ttlMs: '1h' })).rejects.toThrow(/policy/);
      await expect(l.override('a', -1, { ttlMs: '1h' })).rejects.toThrow(/whole number from 0/);
      await expect(l.override('a', 1.5, { ttlMs: '1h' })).rejects.toThrow(/whole number from 0/);
      await expect(l.override('a', 1, { ttlMs: 0 })).rejects.toThrow(/ttlMs/);
      const off = limiter({ limit: 5 });
      await expect(off.override('a', 1, { ttlMs: '1h' })).rejects.toThrow(/FG_OVERRIDES_OFF/);
    },
  },
];
