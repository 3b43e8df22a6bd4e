// The conformance table's reserve-then-settle scenarios (mode 'settle'): exact figures after a settle, debt and its pay-back, idempotency, the cap and the time bound, on any Store.
import type { AlgorithmName, Decision, Limiter, LimitOptions } from '../../src';
import type { ConformanceContext, Scenario } from './scenarios';

const ALL: readonly AlgorithmName[] = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket', 'gcra'];
const isWindowed = (a: AlgorithmName) => a === 'fixed-window' || a === 'sliding-window-log' || a === 'sliding-window-counter';

/** Limit 5: per 60 s for window algorithms; burst 5 refilled at 1/s for token-bucket and gcra. */
function five(algorithm: AlgorithmName): LimitOptions {
  return isWindowed(algorithm) ? { algorithm, limit: 5, windowMs: 60_000 } : { algorithm, burst: 5, refillPerSecond: 1 };
}

/** What is left now (a cost-0 peek), which must come from the store. */
async function left(l: Limiter, subject: string): Promise<number> {
  const d = await l.peek(subject, { cost: 0 });
  expect(d.degraded).toBe(false);
  return d.remaining!;
}

/**
 * After 2 + 2 reserved at T0 and the first settled at 5 (7 units counted against a limit of 5: a debt
 * of 2), the wait until one more unit is admitted: fixed-window and sliding-window-log until the
 * window ends (the log's 3rd-oldest entry leaves it); token-bucket and gcra until the balance is
 * back to 1 token: from -2, 3 s at 1/s; sliding-window-counter once 7 * (1 - e / 60000) + 1 <= 5,
 * e = 25714.28... ms into the next window: 85715 ms.
 */
const DEBT_RETRY: Record<AlgorithmName, number> = {
  'fixed-window': 60_000,
  'sliding-window-log': 60_000,
  'sliding-window-counter': 85_715,
  'token-bucket': 3_000,
  gcra: 3_000,
};

/** A denial now with exactly `want` ms to wait: still denied (told 1 ms) at want - 1, admitted at want. Moves the clock want ms on. */
async function expectRefusedFor(ctx: ConformanceContext, l: Limiter, subject: string, want: number, label: string): Promise<void> {
  const d: Decision = await l.peek(subject);
  expect({ label, allowed: d.allowed, degraded: d.degraded, retryAfterMs: d.retryAfterMs }).toEqual({ label, allowed: false, degraded: false, retryAfterMs: want });
  ctx.clock.advance(want - 1);
  const before = await l.peek(subject);
  expect({ label: `${label}, 1 ms before`, allowed: before.allowed, retryAfterMs: before.retryAfterMs }).toEqual({ label: `${label}, 1 ms before`, allowed: false, retryAfterMs: 1 });
  ctx.clock.advance(1);
  const after = await l.consume(subject);
  expect({ label: `${label}, after`, allowed: after.allowed }).toEqual({ label: `${label}, after`, allowed: true });
}

export const SETTLE_SCENARIOS: readonly Scenario[] = [
  ...ALL.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: a settle below its reservation gives the difference back, one above charges it; a second settle of the same reservation changes nothing`,
      async run(ctx) {
        const l = ctx.limiter({ ...five(algorithm), settle: {} });
        const r = await l.reserve('s', { cost: 3 });
        expect(r.decision).toMatchObject({ allowed: true, remaining: 2 });
        expect(await r.settle(1)).toMatchObject({ settled: true, outcome: 'settled', charged: 1, capped: false, limits: [{ remaining: 4 }] });
        expect(await left(l, 's')).toBe(4);
        expect(await r.settle(1)).toMatchObject({ settled: false, outcome: 'already-settled', charged: null });
        expect(await r.settle(5)).toMatchObject({ settled: false, outcome: 'already-settled' });
        expect(await left(l, 's')).toBe(4);
        const more = await l.reserve('s', { cost: 1 });
        expect(await more.settle(4)).toMatchObject({ settled: true, charged: 4, limits: [{ remaining: 0 }] });
        expect(await left(l, 's')).toBe(0);
        // Settled by its parts, with the reservation's own token: still once.
        const again = await l.settle('s', { at: more.decision.at!, reserved: 1, actual: 4, token: 'Snot-the-same' });
        expect(again.outcome).toBe('settled'); // another token is another reservation's settle
      },
    }),
  ),
  ...ALL.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: a settle above what remains puts the subject into debt, refused until it is paid back (${DEBT_RETRY[algorithm]} ms)`,
      async run(ctx) {
        const l = ctx.limiter({ ...five(algorithm), settle: {} });
        const a = await l.reserve('d', { cost: 2 });
        const b = await l.reserve('d', { cost: 2 });
        expect(b.decision).toMatchObject({ allowed: true, remaining: 1 });
        expect(await a.settle(5)).toMatchObject({ settled: true, charged: 5, limits: [{ remaining: 0 }] });
        // 7 counted against 5: even a request of cost 1, which fitted before the settle, is refused.
        await expectRefusedFor(ctx, l, 'd', DEBT_RETRY[algorithm], 'in debt');
        // The other reservation settles at its estimate: nothing changes.
        expect(await b.settle(2)).toMatchObject({ settled: true, charged: 2 });
      },
    }),
  ),
  ...ALL.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: a settle above settle.maxCost charges maxCost (capped); one past settle.withinMs changes nothing`,
      async run(ctx) {
        const l = ctx.limiter({ ...five(algorithm), settle: { maxCost: 3, withinMs: '2s' } });
        const r = await l.reserve('c', { cost: 1 });
        expect(await r.settle(1_000_000)).toMatchObject({ settled: true, charged: 3, capped: true, limits: [{ remaining: 2 }] });
        expect(await left(l, 'c')).toBe(2);
        const late = await l.reserve('late', { cost: 4 });
        ctx.clock.advance(2_000);
        const before = await left(l, 'late');
        expect(await late.settle(0)).toMatchObject({ settled: false, outcome: 'expired', charged: 4 });
        expect(await left(l, 'late')).toBe(before);
      },
    }),
  ),
  {
    name: 'settle: a denied reservation has nothing to settle; a bad actual cost is refused; the in-flight limit is not settled',
    async run(ctx) {
      const l = ctx.limiter({ limit: 5, windowMs: 60_000, concurrency: { limit: 2 }, settle: {} });
      const r = await l.reserve('n', { cost: 2 });
      expect(r.decision.allowed).toBe(true);
      await expect(r.settle(-1)).rejects.toMatchObject({ code: 'FG_INVALID_COST' });
      await expect(r.settle(1.5)).rejects.toMatchObject({ code: 'FG_INVALID_COST' });
      const settled = await r.settle(4);
      // The rate limit only: 4 of 5 used; the lease (2 slots) is untouched until released.
      expect(settled).toMatchObject({ settled: true, charged: 4 });
      expect(settled.limits.map((x) => x.policy)).toEqual(['default']);
      const peek = await l.peek('n', { cost: 0 });
      expect(peek.limits.map((x) => [x.policy, x.remaining])).toEqual([
        ['default', 1],
        ['concurrency', 0],
      ]);
      await r.decision.lease!.release();
      const denied = await l.reserve('n', { cost: 2 });
      expect(denied.decision.allowed).toBe(false);
      expect(await denied.settle(0)).toMatchObject({ settled: false, outcome: 'not-reserved', charged: 0 });
      expect(await left(l, 'n')).toBe(1);
    },
  },
];
