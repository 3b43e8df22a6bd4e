// fixed-window in memory: the twin of fixed-window.lua, step for step.
import type { Twin, WindowLimit } from '../types';
import { ttl } from '../twin-math';

export interface FixedWindowState {
  w: number;
  c: number;
}

/**
 * The window holding `now`: its id (index, or a calendar period's start) and its end, as the
 * script's `span`. A calendar window's boundaries are computed around `now` itself, so it always
 * holds it; the script gets them from the application's clock and picks by its own.
 */
function span(now: number, limit: WindowLimit): [w: number, end: number] {
  const calendar = limit.calendar;
  if (calendar === undefined) {
    const w = Math.floor(now / limit.windowMs);
    return [w, (w + 1) * limit.windowMs];
  }
  const b = calendar.around(now).boundaries;
  let start: number | undefined;
  for (const t of b) {
    if (t > now) {
      if (start !== undefined) return [start, t];
      break;
    }
    start = t;
  }
  throw new Error(`fixed-window: the clock ${now} is outside the calendar periods ${b.join(',')}`);
}

export const fixedWindow: Twin<FixedWindowState, WindowLimit> = {
  check(s, now, limit, cost) {
    const cap = limit.capacity;
    const [w, end] = span(now, limit);
    const c = s && s.w === w ? s.c : 0;
    const reset = end - now;
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
  refund(s, now, limit, cost, at) {
    const [w, end] = span(now, limit);
    // The charge must have been made in this window: its index (windowMs), or between its start and end (calendar).
    const sameWindow = limit.calendar === undefined ? Math.floor(at / limit.windowMs) === w : at >= w && at < end;
    if (cost === 0 || !sameWindow) return undefined;
    if (!s || s.w !== w || s.c === 0) return undefined;
    return { state: { w, c: Math.max(0, s.c - cost) }, ttlMs: ttl(end - now) };
  },
  // Past the limit the count stays above it (debt) until the window ends.
  debit(s, now, limit, cost) {
    const [w, end] = span(now, limit);
    const c = s && s.w === w ? s.c : 0;
    return { state: { w, c: c + cost }, ttlMs: ttl(end - now) };
  },
};
