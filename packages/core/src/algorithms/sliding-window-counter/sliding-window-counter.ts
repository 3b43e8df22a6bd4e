// sliding-window-counter in memory: the twin of sliding-window-counter.lua, step for step.
import type { Twin, WindowLimit } from '../types';
import { EPSILON } from '../types';
import { ttl } from '../twin-math';

export interface SlidingWindowCounterState {
  w: number;
  c: number;
  p: number;
}

/** The counts of window w and of the one before it, from the stored state (Lua: counts). */
function counts(s: SlidingWindowCounterState | undefined, w: number): { c: number; p: number } {
  if (s && s.w === w) return { c: s.c, p: s.p };
  if (s && s.w === w - 1) return { c: 0, p: s.c };
  return { c: 0, p: 0 };
}

export const slidingWindowCounter: Twin<SlidingWindowCounterState, WindowLimit> = {
  check(s, now, limit, cost) {
    const cap = limit.capacity;
    const win = limit.windowMs;
    // The view at `now`, inline (the admitted path allocates nothing but its answer): the window,
    // the ms elapsed in it, the current and previous counts, the weighted estimate.
    const w = Math.floor(now / win);
    const elapsed = now - w * win;
    const c = s !== undefined && s.w === w ? s.c : 0;
    const p = s === undefined ? 0 : s.w === w ? s.p : s.w === w - 1 ? s.c : 0;
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
    // What this check would see at time `at`, from the stored state: used to settle retry.
    const view = (at: number) => {
      const wAt = Math.floor(at / win);
      const counted = counts(s, wAt);
      return { est: (counted.p * (win - (at - wAt * win))) / win + counted.c };
    };
    const reset = c > 0 ? win - elapsed + win : p > 0 ? win - elapsed : 0;
    let retry = -1;
    if (cost <= cap) {
      const room = cap - c - cost;
      if (room >= 0) {
        // still in this window: p * (win - e) / win + c + cost <= cap + EPSILON
        retry = Math.max(1, Math.ceil(win - ((room + EPSILON) * win) / p - elapsed));
      } else {
        // in the next window c becomes p: c * (win - e2) / win + cost <= cap + EPSILON
        let e2 = win - ((cap - cost + EPSILON) * win) / c;
        if (e2 < 0) e2 = 0;
        retry = Math.max(1, Math.ceil(win - elapsed + e2));
      }
      // Rounding can put that estimate 1 ms off the admission test above: settle on the test itself,
      // so that waiting retry admits and waiting retry - 1 does not.
      if (retry > 1 && view(now + retry - 1).est + cost <= cap + EPSILON) {
        retry = retry - 1;
      } else if (view(now + retry).est + cost > cap + EPSILON) {
        retry = retry + 1;
      }
    }
    return {
      allowed: false,
      remaining: Math.max(0, Math.floor(cap - est + EPSILON)),
      resetMs: reset,
      retryAfterMs: retry,
    };
  },
  refund(s, now, { windowMs: win }, cost, at) {
    const w = Math.floor(now / win);
    let { c, p } = counts(s, w);
    const wa = Math.floor(at / win);
    if (cost === 0) return undefined;
    if (wa === w && c > 0) c = Math.max(0, c - cost);
    else if (wa === w - 1 && p > 0) p = Math.max(0, p - cost);
    else return undefined;
    return { state: { w, c, p }, ttlMs: ttl(win - (now - w * win) + win) };
  },
  // Past the limit the estimate stays above it (debt) until enough of it has faded.
  debit(s, now, { windowMs: win }, cost) {
    const w = Math.floor(now / win);
    const { c, p } = counts(s, w);
    return { state: { w, c: c + cost, p }, ttlMs: ttl(win - (now - w * win) + win) };
  },
};
