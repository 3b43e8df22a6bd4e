// token-bucket in memory: the twin of token-bucket.lua, step for step.
import type { RateLimit, Twin } from '../types';
import { EPSILON } from '../types';
import { ttl } from '../twin-math';

export interface TokenBucketState {
  t: number;
  ts: number;
}

/** The tokens the stored state holds at time `at`: refilled lazily, up to cap (Lua: tokensIn). */
function tokensIn(s: TokenBucketState | undefined, cap: number, rate: number, at: number): number {
  if (!s) return cap;
  let elapsed = at - s.ts;
  if (elapsed < 0) elapsed = 0;
  return Math.min(cap, s.t + (elapsed * rate) / 1000);
}

export const tokenBucket: Twin<TokenBucketState, RateLimit> = {
  check(s, now, { capacity: cap, refillPerSecond: rate }, cost) {
    // The tokens this check sees at time `at`, from the stored state (also used to settle retry).
    const tokensAt = (at: number): number => tokensIn(s, cap, rate, at);
    const tokens = tokensAt(now);
    if (tokens + EPSILON >= cost) {
      const left = Math.max(0, tokens - cost);
      const full = ((cap - left) * 1000) / rate;
      return {
        allowed: true,
        remaining: Math.floor(left + EPSILON),
        resetMs: Math.ceil(full),
        retryAfterMs: 0,
        next: { state: { t: left, ts: now }, ttlMs: ttl(full) },
      };
    }
    let retry = -1;
    if (cost <= cap) {
      retry = Math.max(1, Math.ceil(((cost - EPSILON - tokens) * 1000) / rate));
      // Rounding can put that estimate 1 ms off the admission test above: settle on the test itself,
      // so that waiting retry admits and waiting retry - 1 does not.
      if (retry > 1 && tokensAt(now + retry - 1) + EPSILON >= cost) {
        retry = retry - 1;
      } else if (tokensAt(now + retry) + EPSILON < cost) {
        retry = retry + 1;
      }
    }
    return {
      allowed: false,
      // A balance in debt (a settle's debit) is below zero: what is left is still never negative.
      remaining: Math.max(0, Math.floor(tokens + EPSILON)),
      resetMs: Math.ceil(((cap - tokens) * 1000) / rate),
      retryAfterMs: retry,
    };
  },
  refund(s, now, { capacity: cap, refillPerSecond: rate }, cost) {
    const tokens = tokensIn(s, cap, rate, now);
    if (cost === 0 || tokens >= cap) return undefined;
    const t = tokens + cost;
    if (t >= cap) return null;
    return { state: { t, ts: now }, ttlMs: ttl(((cap - t) * 1000) / rate) };
  },
  // Below zero the balance is negative (debt) and refills from there.
  debit(s, now, { capacity: cap, refillPerSecond: rate }, cost) {
    const t = tokensIn(s, cap, rate, now) - cost;
    return { state: { t, ts: now }, ttlMs: ttl(((cap - t) * 1000) / rate) };
  },
};
