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

/**
 * Every rate here is 100 times slower than its figures read (and every ms 100 times longer): Redis
 * expires keys in real time, and a state that lasts about a second could expire between two calls
 * on a loaded machine (seen through the HTTP store). So `S` ms of the store's clock stand for 1.
 */
const S = 100;
/** Burst 2 refilled at 2 per 100 s: one unit every 500 * S ms once the burst is spent. */
const twoPerSecond = (algorithm: (typeof RATE)[number]) => ({ algorithm, burst: 2, refillPerSecond: 2 / S });

async function hold(l: Limiter, maxDelayMs: number, subject = 's'): Promise<Decision> {
  return l.consume(subject, { maxDelayMs });
}

export const SHAPE_SCENARIOS: readonly Scenario[] = [
  ...RATE.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: shaping holds a request for the slot it conforms at, reserved at once; past maxDelayMs it is refused and charged nothing`,
      async run(ctx: ConformanceContext) {
        const l = ctx.limiter(twoPerSecond(algorithm));
        await expectHeld('burst 1', hold(l, 1000 * S), { allowed: true, remaining: 1 });
        await expectHeld('burst 2', hold(l, 1000 * S), { allowed: true, remaining: 0 });
        const third = await expectHeld('held for the next slot', hold(l, 1000 * S), { allowed: true, delayMs: 500 * S, remaining: 0, retryAfterMs: 0 });
        expect(third.at).toBe(ctx.clock.now());
        await expectHeld('the one after queues behind it', hold(l, 1000 * S), { allowed: true, delayMs: 1000 * S });
        await expectHeld('1500 ms away: past maxDelayMs, refused', hold(l, 1000 * S), { allowed: false, reason: 'limited', retryAfterMs: 1500 * S });
        // The refusal reserved nothing: a longer hold gets that very slot.
        await expectHeld('the refused slot is still free', hold(l, 2000 * S), { allowed: true, delayMs: 1500 * S });
        // A plain consume is refused with the wait the queue left.
        await expectHeld('a plain consume waits behind the queue', l.consume('s'), { allowed: false, retryAfterMs: 2000 * S });
        ctx.clock.advance(500 * S);
        await expectHeld('500 ms on, the queue is one slot shorter', hold(l, 1500 * S), { allowed: true, delayMs: 1500 * S });
      },
    }),
  ),
  ...RATE.map(
    (algorithm): Scenario => ({
      name: `${algorithm}: a held request refunded (its caller went away) gives its slot to the next one`,
      async run(ctx: ConformanceContext) {
        const l = ctx.limiter(twoPerSecond(algorithm));
        await hold(l, 5000 * S);
        await hold(l, 5000 * S);
        await expectHeld('held 500', hold(l, 5000 * S), { allowed: true, delayMs: 500 * S });
        const gone = await expectHeld('held 1000', hold(l, 5000 * S), { allowed: true, delayMs: 1000 * S });
        expect(await l.refund('s', { at: gone.at! })).toBe(true);
        await expectHeld('the next takes the slot given back', hold(l, 5000 * S), { allowed: true, delayMs: 1000 * S });
        await expectHeld('and the one after is behind it', hold(l, 5000 * S), { allowed: true, delayMs: 1500 * S });
      },
    }),
  ),
  {
    name: 'shaping over two limits: held only when every denying limit can hold; a window limit refuses as without it',
    async run(ctx: ConformanceContext) {
      const both = ctx.limiter({ limits: [{ name: 'fast', algorithm: 'gcra', burst: 1, refillPerSecond: 10 / S }, { name: 'slow', algorithm: 'token-bucket', burst: 3, refillPerSecond: 1 / S }] });
      await expectHeld('first', hold(both, 2000 * S), { allowed: true });
      await expectHeld('fast holds 100 ms', hold(both, 2000 * S), { allowed: true, delayMs: 100 * S });
      await expectHeld('fast 200 ms', hold(both, 2000 * S), { allowed: true, delayMs: 200 * S });
      // slow is spent: its next unit in 1000 ms, the longer wait speaks.
      await expectHeld('slow holds 1000 ms', hold(both, 2000 * S), { allowed: true, delayMs: 1000 * S });
      await expectHeld('slow 2000 ms', hold(both, 2000 * S), { allowed: true, delayMs: 2000 * S });
      await expectHeld('slow 3000 ms: refused', hold(both, 2000 * S), { allowed: false, retryAfterMs: 3000 * S });
      const windowed = ctx.limiter({ algorithm: 'fixed-window', limit: 1, windowMs: 1000 * S });
      await expectHeld('window: first', hold(windowed, 5000 * S), { allowed: true });
      await expectHeld('window: refused, never held', hold(windowed, 5000 * S), { allowed: false, retryAfterMs: 1000 * S });
    },
  },
];
