// The conformance table's shaping scenarios (mode 'hold', `maxDelayMs`): the reserved slot, the bound, the refund of a held request, all-or-nothing over several limits, on any Store.
import type { Decision, Limiter } from '../../src';
import type { ConformanceContext, Scenario } from './scenarios';

type Want = Partial<Pick<Decision, 'allowed' | 'reason' | 'remaining' | 'retryAfterMs' | 'delayMs' | 'degraded'>>;

/** The named fields of a decision (delayMs absent reads as undefined); never degraded. */
async function expectHeld(label: string, got: Promise<Decision>, want: Want): Promise<Decision> {
  const d = await got;
  const seen: Record<string, unknown> = { label, degraded: d.degraded, delayMs: d.delayMs };
  for (const key of Object.keys(want)) seen[key] = d[key as keyof Want];
  expect(seen).toEqual({ label, degraded: false, delayMs: undefined, ...want });
  return d;
}

const RATE = ['gcra', 'token-bucket'] as const;

/** Burst 2 refilled at 2/s: one unit every 500 ms once the burst is spent. */
const twoPerSecond = (algorithm: (typeof RATE)[number]) => ({ algorithm, burst: 2, refillPerSecond: 2 });

async function hold(l: Limiter, maxDelayMs: number, subject = 's'): Promise<Decision> {
  return l.consume(subject, { maxDelayMs });
}

export const SHAPE_SCENARIOS: readonly Scenario[] = [
  ...RATE.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: shaping holds a request for the slot it conforms at, reserved at once; past maxDelayMs it is refused and charged nothing`,
      async run(ctx: ConformanceContext) {
        const l = ctx.limiter(twoPerSecond(algorithm));
        await expectHeld('burst 1', hold(l, 1000), { allowed: true, remaining: 1 });
        await expectHeld('burst 2', hold(l, 1000), { allowed: true, remaining: 0 });
        const third = await expectHeld('held for the next slot', hold(l, 1000), { allowed: true, delayMs: 500, remaining: 0, retryAfterMs: 0 });
        expect(third.at).toBe(ctx.clock.now());
        await expectHeld('the one after queues behind it', hold(l, 1000), { allowed: true, delayMs: 1000 });
        await expectHeld('1500 ms away: past maxDelayMs, refused', hold(l, 1000), { allowed: false, reason: 'limited', retryAfterMs: 1500 });
        // The refusal reserved nothing: a longer hold gets that very slot.
        await expectHeld('the refused slot is still free', hold(l, 2000), { allowed: true, delayMs: 1500 });
        // A plain consume is refused with the wait the queue left.
        await expectHeld('a plain consume waits behind the queue', l.consume('s'), { allowed: false, retryAfterMs: 2000 });
        ctx.clock.advance(500);
        await expectHeld('500 ms on, the queue is one slot shorter', hold(l, 1500), { allowed: true, delayMs: 1500 });
      },
    }),
  ),
  ...RATE.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: a held request refunded (its caller went away) gives its slot to the next one`,
      async run(ctx: ConformanceContext) {
        const l = ctx.limiter(twoPerSecond(algorithm));
        await hold(l, 5000);
        await hold(l, 5000);
        await expectHeld('held 500', hold(l, 5000), { allowed: true, delayMs: 500 });
        const gone = await expectHeld('held 1000', hold(l, 5000), { allowed: true, delayMs: 1000 });
        expect(await l.refund('s', { at: gone.at! })).toBe(true);
        await expectHeld('the next takes the slot given back', hold(l, 5000), { allowed: true, delayMs: 1000 });
        await expectHeld('and the one after is behind it', hold(l, 5000), { allowed: true, delayMs: 1500 });
      },
    }),
  ),
  {
    name: 'shaping over two limits: held only when every denying limit can hold; a window limit refuses as without it',
    async run(ctx: ConformanceContext) {
      const both = ctx.limiter({ limits: [{ name: 'fast', algorithm: 'gcra', burst: 1, refillPerSecond: 10 }, { name: 'slow', algorithm: 'token-bucket', burst: 3, refillPerSecond: 1 }] });
      await expectHeld('first', hold(both, 2000), { allowed: true });
      await expectHeld('fast holds 100 ms', hold(both, 2000), { allowed: true, delayMs: 100 });
      await expectHeld('fast 200 ms', hold(both, 2000), { allowed: true, delayMs: 200 });
      // slow is spent: its next unit in 1000 ms, the longer wait speaks.
      await expectHeld('slow holds 1000 ms', hold(both, 2000), { allowed: true, delayMs: 1000 });
      await expectHeld('slow 2000 ms', hold(both, 2000), { allowed: true, delayMs: 2000 });
      await expectHeld('slow 3000 ms: refused', hold(both, 2000), { allowed: false, retryAfterMs: 3000 });
      const windowed = ctx.limiter({ algorithm: 'fixed-window', limit: 1, windowMs: 1000 });
      await expectHeld('window: first', hold(windowed, 5000), { allowed: true });
      await expectHeld('window: refused, never held', hold(windowed, 5000), { allowed: false, retryAfterMs: 1000 });
    },
  },
];
