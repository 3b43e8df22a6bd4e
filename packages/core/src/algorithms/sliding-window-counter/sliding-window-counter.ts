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

/** What a check sees at time `at` from the stored state: the weighted estimate (Lua: view). */
function estimateAt(s: SlidingWindowCounterState | undefined, win: number, at: number): number {
  const wAt = Math.floor(at / win);
  const counted = counts(s, wAt);
  return (counted.p * (win - (at - wAt * win))) / win + counted.c;
}

/**
 * Ms until a request of `cost` fits, from state `s` at `now` (c, p, elapsed: its view); -1 when it
 * never can (Lua: untilFits). A denial's retry, and an admission's reset when it leaves nothing.
 */
function untilFits(s: SlidingWindowCounterState | undefined, win: number, now: number, cap: number, cost: number, c: number, p: number, elapsed: number): number {
  if (cost > cap) return -1;
  let retry: number;
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
  // Rounding can put that estimate 1 ms off the admission test: settle on the test itself, so that
  // waiting retry admits and waiting retry - 1 does not.
  if (retry > 1 && estimateAt(s, win, now + retry - 1) + cost <= cap + EPSILON) {
    retry = retry - 1;
  } else if (estimateAt(s, win, now + retry) + cost > cap + EPSILON) {
    retry = retry + 1;
  }
  return retry;
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
      const left = Math.max(0, Math.floor(cap - est - cost + EPSILON));
      const state = { w, c: c + cost, p };
      // Nothing left: the reset says when the next unit is back, as a denial's retry does.
      const reset =
        left === 0 && cap >= 1 ? untilFits(state, win, now, cap, 1, c + cost, p, elapsed) : c + cost > 0 ? win - elapsed + win : p > 0 ? win - elapsed : 0;
      return {
        allowed: true,
        remaining: left,
        resetMs: reset,
        retryAfterMs: 0,
        next: { state, ttlMs: ttl(win - elapsed + win) },
      };
    }
    const reset = c > 0 ? win - elapsed + win : p > 0 ? win - elapsed : 0;
    return {
      allowed: false,
      remaining: Math.max(0, Math.floor(cap - est + EPSILON)),
      resetMs: reset,
      retryAfterMs: untilFits(s, win, now, cap, cost, c, p, elapsed),
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
  assign(into, from) {
    into.w = from.w;
    into.c = from.c;
    into.p = from.p;
  },
  // Past the limit the estimate stays above it (debt) until enough of it has faded.
  debit(s, now, { windowMs: win }, cost) {
    const w = Math.floor(now / win);
    const { c, p } = counts(s, w);
    return { state: { w, c: c + cost, p }, ttlMs: ttl(win - (now - w * win) + win) };
  },
};
