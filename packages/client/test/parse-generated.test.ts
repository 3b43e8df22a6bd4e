// Generated hostile RateLimit fields (r/a, t/w, q, w, X-RateLimit-Reset of any value a server can send): the parser never throws and the pacer's hold stays bounded.
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

  it('X-RateLimit-Reset in Unix seconds: the start of the named second is never before it, on the server clock, and never held past maxHoldMs', async () => {
    const reset = fc.oneof(
      fc.integer({ min: NOW / 1000 - 5, max: NOW / 1000 + 10 }).map(String),
      fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
      fc.double({ noNaN: true, noDefaultInfinity: true, min: 1e9, max: 1e13 }).map((n) => n.toFixed(3)),
    );
    // The client clock at or off the server's (the Date field), by up to 3 s either way.
    await fc.assert(
      fc.asyncProperty(reset, fc.integer({ min: -3000, max: 3000 }), fc.boolean(), fc.boolean(), async (value, skewMs, withDate, refused) => {
        const headers: Record<string, string> = { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': value };
        if (withDate) headers.date = new Date(NOW).toUTCString();
        const nowMs = NOW + skewMs;
        const [q] = parseRateLimit(headers, { nowMs }).quotas;
        if (q.resetStartMs !== undefined) {
          expect(q.resetStartMs).toBeGreaterThanOrEqual(0);
          expect(q.resetStartMs).toBeLessThanOrEqual(q.resetMs!);
          expect(q.resetMs! - q.resetStartMs).toBeLessThanOrEqual(1000);
          // Never before the second it names: by the server's clock when it sent Date (its second ends by
          // NOW + 1000), else by the client's, the only one there is.
          expect(q.resetStartMs).toBeGreaterThanOrEqual(Math.max(0, Number(value) * 1000 - (withDate ? NOW + 1000 : nowMs)));
        }
        let t = 0;
        const pacer = new Pacer({ jitterMs: 0, maxHoldMs: MAX_HOLD_MS, now: () => t });
        // An answer, then (refused) the request sent once its hold has passed is refused: the scope learns to read the end.
        for (const status of refused ? [200, 429] : [200]) {
          const ticket = await pacer.acquire('s', pacer.budget(0));
          pacer.settle(ticket, { status, method: 'GET', headers, attempt: 0, retryAllowed: false });
          for (const s of pacer.snapshot('s').quotas) expect(s.resetInMs ?? 0).toBeLessThanOrEqual(MAX_HOLD_MS);
          t += MAX_HOLD_MS;
        }
        pacer.release(await pacer.acquire('s', pacer.budget(0)));
      }),
      { numRuns: 300 },
    );
  });
});
