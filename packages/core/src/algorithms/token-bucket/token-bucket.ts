// token-bucket in memory: the twin of token-bucket.lua, step for step.
import type { Twin } from '../types';
import { EPSILON, ttl } from '../twin-math';

export interface TokenBucketState {
  t: number;
  ts: number;
}

export const tokenBucket: Twin<TokenBucketState> = {
  check(s, now, { capacity: cap, period: rate }, cost) {
    let tokens = cap;
    if (s) {
      let elapsed = now - s.ts;
      if (elapsed < 0) elapsed = 0;
      tokens = Math.min(cap, s.t + (elapsed * rate) / 1000);
    }
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
    return {
      allowed: false,
      remaining: Math.floor(tokens + EPSILON),
      resetMs: Math.ceil(((cap - tokens) * 1000) / rate),
      retryAfterMs: cost <= cap ? Math.max(1, Math.ceil(((cost - tokens) * 1000) / rate)) : -1,
    };
  },
};
