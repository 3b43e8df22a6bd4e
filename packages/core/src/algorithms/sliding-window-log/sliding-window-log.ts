// sliding-window-log in memory: the twin of sliding-window-log.lua, step for step.
import type { Twin } from '../types';
import { ttl } from '../twin-math';

/** Admission times, oldest first; one entry per admitted unit, as the ZSET holds them. */
export type SlidingWindowLogState = readonly number[];

export const slidingWindowLog: Twin<SlidingWindowLogState> = {
  check(s, now, { capacity: cap, period: win }, cost) {
    const floor = now - win;
    const live = s ? s.filter((t) => t > floor) : [];
    const n = live.length;
    const newest = n > 0 ? live[n - 1] : undefined;
    if (n + cost <= cap) {
      const reset = cost > 0 ? win : newest !== undefined ? newest + win - now : 0;
      return {
        allowed: true,
        remaining: cap - n - cost,
        resetMs: reset,
        retryAfterMs: 0,
        // Like the script, a zero-cost request writes nothing.
        next:
          cost > 0
            ? {
                state: live.concat(new Array<number>(cost).fill(now)).sort((a, b) => a - b),
                ttlMs: ttl(win),
              }
            : undefined,
      };
    }
    const retry = cost <= cap ? Math.max(1, live[n + cost - cap - 1] + win - now) : -1;
    return {
      allowed: false,
      remaining: Math.max(0, cap - n),
      resetMs: newest !== undefined ? newest + win - now : 0,
      retryAfterMs: retry,
    };
  },
  refund(s, now, { period: win }, cost, at) {
    if (cost === 0 || !s || at <= now - win) return undefined;
    const kept: number[] = [];
    let gone = 0;
    for (const t of s) {
      if (t === at && gone < cost) gone++;
      else kept.push(t);
    }
    if (gone === 0) return undefined;
    // Nothing left in the window: the key goes (as the script's ZREM or DEL).
    const left = kept.length === 0 ? 0 : kept[kept.length - 1] + win - now;
    return left > 0 ? { state: kept, ttlMs: ttl(left) } : null;
  },
};
