// Generated hostile RateLimit fields (r/a, t/w, q, w, floodgate-t-ms, X-RateLimit-Reset, Floodgate-Reset-Ms of any value a server can send): the parser never throws, ms never move a reset off its whole seconds, and the pacer's hold stays bounded.
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
const param = fc.tuple(fc.constantFrom('r', 'a', 't', 'w', 'q', 'qu', 'pk', 'floodgate-t-ms'), value).map(([k, v]) => `;${k}=${v}`);
const item = fc.tuple(fc.constantFrom('"p"', '"q"', 'p'), fc.array(param, { maxLength: 5 })).map(([name, params]) => name + params.join(''));
const field = fc.array(item, { minLength: 1, maxLength: 4 }).map((items) => items.join(', '));

/** A pacer that heard `headers` on a `status` answer holds its scope at most maxHoldMs; past that, the next request goes at once. */
async function expectHoldBounded(headers: Record<string, string>, status: number): Promise<void> {
  let t = 0;
  const pacer = new Pacer({ jitterMs: 0, maxHoldMs: MAX_HOLD_MS, now: () => t });
  const ticket = await pacer.acquire('s', pacer.budget(0));
  pacer.settle(ticket, { status, method: 'GET', headers, attempt: 0, retryAllowed: false });
  for (const q of pacer.snapshot('s').quotas) expect(q.resetInMs ?? 0).toBeLessThanOrEqual(MAX_HOLD_MS);
  // Past maxHoldMs whatever the fields said, the next request goes at once (no budget to wait).
  t += MAX_HOLD_MS;
  pacer.release(await pacer.acquire('s', pacer.budget(0)));
}

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
        await expectHoldBounded(headers, 200);
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

/** A Floodgate-Reset-Ms (or floodgate-t-ms) value: near the whole seconds, huge, negative, fractional, repeated, junk. */
const msValue = fc.oneof(
  fc.integer({ min: -2000, max: 12_000 }).map(String),
  fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }).map((n) => n.toFixed(2)),
  fc.tuple(fc.integer({ min: 0, max: 12_000 }), fc.integer({ min: 0, max: 12_000 })).map(([a, b]) => `${a}, ${b}`),
  fc.constantFrom('', ' ', 'abc', '1e3', '0x10', 'Infinity', '-0', '184ms', '"184"'),
);

/** The same headers' quotas with the ms hint removed: the whole seconds the server also sent. */
const without = (headers: Record<string, string>, strip: (h: Record<string, string>) => Record<string, string>) => parseRateLimit(strip({ ...headers }), { nowMs: NOW }).quotas;

describe('hostile ms resets, generated', () => {
  it('Floodgate-Reset-Ms beside draft-6 / X- fields moves a reset only within the second(s) its whole seconds name, never later, and never holds past maxHoldMs', async () => {
    const resetField = fc.oneof(fc.integer({ min: 0, max: 10 }).map(String), fc.integer({ min: NOW / 1000 - 2, max: NOW / 1000 + 10 }).map(String));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('ratelimit', 'x-ratelimit'), resetField, msValue, async (prefix, resetValue, ms) => {
        const headers: Record<string, string> = { [`${prefix}-limit`]: '10', [`${prefix}-remaining`]: '0', [`${prefix}-reset`]: resetValue, 'floodgate-reset-ms': ms };
        const [q] = parseRateLimit(headers, { nowMs: NOW }).quotas;
        const [whole] = without(headers, (h) => (delete h['floodgate-reset-ms'], h));
        expect(whole.resetMs).toBeDefined();
        expect(Number.isFinite(q.resetMs) && q.resetMs! >= 0).toBe(true);
        // Never later than the whole seconds; earlier only within the second (two for a Unix second) before them.
        const span = whole.resetConvention === 'epoch-seconds' ? 2000 : 1000;
        expect(q.resetMs!).toBeLessThanOrEqual(whole.resetMs!);
        expect(q.resetMs!).toBeGreaterThan(whole.resetMs! - span);
        if (q.resetMs !== whole.resetMs) expect(q.resetMs).toBe(Number(ms.trim()));
        await expectHoldBounded(headers, 429);
      }),
      { numRuns: 400 },
    );
  });

  it('floodgate-t-ms on a draft-10 item moves its reset only within the second before its t, never later', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 10 }), msValue, fc.boolean(), async (t, ms, quoted) => {
        const msParam = quoted ? `"${ms}"` : ms;
        const headers = { ratelimit: `"p";r=0;t=${t};floodgate-t-ms=${msParam}`, 'ratelimit-policy': '"p";q=10;w=10' };
        const [q] = parseRateLimit(headers, { nowMs: NOW }).quotas;
        const [whole] = without(headers, (h) => ({ ...h, ratelimit: `"p";r=0;t=${t}` }));
        expect(whole.resetMs).toBe(t * 1000);
        if (q === undefined) throw new Error(`no quota read from ${headers.ratelimit}`);
        // A value that is no Structured Field (an integer of 16 digits and more, junk) fails the whole
        // field, which RFC 9651 says to ignore: the policy's quota stays, with no remaining or reset.
        const wellFormed = quoted ? !/["\\]/.test(ms) : /^-?\d{1,15}$/.test(ms) || /^-?\d{1,12}\.\d{1,3}$/.test(ms);
        if (wellFormed) expect(q.remaining).toBe(0);
        if (q.remaining === undefined) return expect(q.resetMs).toBeUndefined();
        expect(q.resetMs!).toBeLessThanOrEqual(whole.resetMs!);
        expect(q.resetMs!).toBeGreaterThan(whole.resetMs! - 1000);
      }),
      { numRuns: 400 },
    );
  });
});
