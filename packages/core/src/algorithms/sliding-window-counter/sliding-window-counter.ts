// sliding-window-counter in memory: the twin of sliding-window-counter.lua, step for step.
import type { Twin } from '../types';
import { EPSILON, ttl } from '../twin-math';

export interface SlidingWindowCounterState {
  w: number;
  c: number;
  p: number;
}

export const slidingWindowCounter: Twin<SlidingWindowCounterState> = {
  check(s, now, { capacity: cap, period: win }, cost) {
    const w = Math.floor(now / win);
    const elapsed = now - w * win;
    let c = 0;
    let p = 0;
    if (s) {
      if (s.w === w) {
        c = s.c;
        p = s.p;
      } else if (s.w === w - 1) {
        p = s.c;
      }
    }
    const est = (p * (win - elapsed)) / win + c;
    if (est + cost <= cap + EPSILON) {
      const reset = c + cost > 0 ? win - elapsed + win : p > 0 ? win - elapsed : 0;
      return {
        allowed: true,
        remaining: Math.max(0, Math.floor(cap - est - cost + EPSILON)),
        resetMs: reset,
        retryAfterMs: 0,
        next: { state: { w, c: c + cost, p }, ttlMs: ttl(win - elapsed + win) },
      };
    }
    const reset = c > 0 ? win - elapsed + win : p > 0 ? win - elapsed : 0;
    let retry = -1;
    if (cost <= cap) {
      const room = cap - c - cost;
      if (room >= 0) {
        retry = Math.max(1, Math.ceil(win - (room * win) / p - elapsed));
      } else {
        let e2 = win - ((cap - cost) * win) / c;
        if (e2 < 0) e2 = 0;
        retry = Math.max(1, Math.ceil(win - elapsed + e2));
      }
    }
    return {
      allowed: false,
      remaining: Math.max(0, Math.floor(cap - est + EPSILON)),
      resetMs: reset,
      retryAfterMs: retry,
    };
  },
};
