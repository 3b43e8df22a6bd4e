// fixed-window in memory: the twin of fixed-window.lua, step for step.
import type { Twin, WindowLimit } from '../types';
import { ttl } from '../twin-math';

export interface FixedWindowState {
  w: number;
  c: number;
}

export const fixedWindow: Twin<FixedWindowState, WindowLimit> = {
  check(s, now, { capacity: cap, windowMs: win }, cost) {
    const w = Math.floor(now / win);
    const c = s && s.w === w ? s.c : 0;
    const reset = (w + 1) * win - now;
    if (c + cost <= cap) {
      return {
        allowed: true,
        remaining: cap - c - cost,
        resetMs: reset,
        retryAfterMs: 0,
        next: { state: { w, c: c + cost }, ttlMs: ttl(reset) },
      };
    }
    return {
      allowed: false,
      remaining: Math.max(0, cap - c),
      resetMs: reset,
      retryAfterMs: cost > cap ? -1 : reset,
    };
  },
  refund(s, now, { windowMs: win }, cost, at) {
    const w = Math.floor(now / win);
    if (cost === 0 || Math.floor(at / win) !== w) return undefined;
    if (!s || s.w !== w || s.c === 0) return undefined;
    return { state: { w, c: Math.max(0, s.c - cost) }, ttlMs: ttl((w + 1) * win - now) };
  },
  // Past the limit the count stays above it (debt) until the window ends.
  debit(s, now, { windowMs: win }, cost) {
    const w = Math.floor(now / win);
    const c = s && s.w === w ? s.c : 0;
    return { state: { w, c: c + cost }, ttlMs: ttl((w + 1) * win - now) };
  },
};
