// Generated hostile RateLimit fields (r/a, t/w, q, w of any value a server can send): the parser never throws and the pacer's hold stays bounded.
import fc from 'fast-check';
import { Pacer } from '../src';
import { parseRateLimit } from '../src/parse';

const NOW = Date.parse('2026-12-01T12:00:00.000Z');
const MAX_HOLD_MS = 5_000;

/** A parameter value as text: integers of any size and sign, decimals, strings, tokens, booleans, byte sequences, junk. */
const value = fc.oneof(
  fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e16, max: 1e16 }).map((n) => n.toFixed(3)),
  fc.constantFrom('"9"', 'tok', '?1', '?0', ':AAAA:', '', '(1 2)', '1e9', 'Infinity', '-0'),
);
const param = fc.tuple(fc.constantFrom('r', 'a', 't', 'w', 'q', 'qu', 'pk'), value).map(([k, v]) => `;${k}=${v}`);
const item = fc.tuple(fc.constantFrom('"p"', '"q"', 'p'), fc.array(param, { maxLength: 5 })).map(([name, params]) => name + params.join(''));
const field = fc.array(item, { minLength: 1, maxLength: 4 }).map((items) => items.join(', '));

describe('hostile RateLimit fields, generated', () => {
  it('parse to non-negative finite figures or nothing, and never hold a scope past maxHoldMs', async () => {
    await fc.assert(
      fc.asyncProperty(field, field, async (limitField, policyField) => {
        const headers = { ratelimit: limitField, 'ratelimit-policy': policyField };
        const info = parseRateLimit(headers, { nowMs: NOW });
        for (const q of info.quotas) {
          for (const n of [q.remaining, q.resetMs, q.limit, q.windowMs]) {
            if (n !== undefined) expect(Number.isFinite(n) && n >= 0).toBe(true);
          }
        }
        let t = 0;
        const pacer = new Pacer({ jitterMs: 0, maxHoldMs: MAX_HOLD_MS, now: () => t });
        const ticket = await pacer.acquire('s', pacer.budget(0));
        pacer.settle(ticket, { status: 200, method: 'GET', headers, attempt: 0, retryAllowed: false });
        for (const q of pacer.snapshot('s').quotas) expect(q.resetInMs ?? 0).toBeLessThanOrEqual(MAX_HOLD_MS);
        // Past maxHoldMs whatever the fields said, the next request goes at once (no budget to wait).
        t += MAX_HOLD_MS;
        pacer.release(await pacer.acquire('s', pacer.budget(0)));
      }),
      { numRuns: 300 },
    );
  });
});
