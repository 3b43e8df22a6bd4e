// sliding-window-log in memory: the twin of sliding-window-log.lua, step for step.
import type { Twin, WindowLimit } from '../types';
import { ttl } from '../twin-math';

/**
 * Admission times, oldest first, one per admitted unit, as the ZSET's scores; `seq` is the next unit
 * name's base, as the script keeps it in its '#<seq>' member (an array never overwrites an entry,
 * so names are not needed here to stay exact; the sequence is kept to mirror the script).
 */
export interface SlidingWindowLogState {
  readonly log: readonly number[];
  readonly seq: number;
}

export const slidingWindowLog: Twin<SlidingWindowLogState, WindowLimit> = {
  check(s, now, { capacity: cap, windowMs: win }, cost) {
    const floor = now - win;
    // Entries after now (the clock stepped back) are in the window, as ZCOUNT (floor, +inf] counts them.
    const live = s ? s.log.filter((t) => t > floor) : [];
    const n = live.length;
    const newest = n > 0 ? live[n - 1] : undefined;
    if (n + cost <= cap) {
      const reset = cost > 0 ? win : newest !== undefined ? newest + win - now : 0;
      return {
        allowed: true,
        remaining: cap - n - cost,
        resetMs: reset,
        retryAfterMs: 0,
        // Like the script, a zero-cost request writes nothing: it neither prunes nor touches the TTL.
        next:
          cost > 0
            ? {
                state: { log: live.concat(new Array<number>(cost).fill(now)).sort((a, b) => a - b), seq: (s?.seq ?? 0) + cost },
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
  refund(s, now, { windowMs: win }, cost, at) {
    if (cost === 0 || !s || at <= now - win) return undefined;
    const kept: number[] = [];
    let gone = 0;
    for (const t of s.log) {
      if (t === at && gone < cost) gone++;
      else kept.push(t);
    }
    if (gone === 0) return undefined;
    // No unit left in the window: the key goes (the script's DEL, its sequence member with it).
    const left = kept.length === 0 ? 0 : kept[kept.length - 1] + win - now;
    return left > 0 ? { state: { log: kept, seq: s.seq }, ttlMs: ttl(left) } : null;
  },
  // The script's append: prunes what left the window, then `cost` entries at now (debt past the limit).
  debit(s, now, { windowMs: win }, cost) {
    const live = s ? s.log.filter((t) => t > now - win) : [];
    return { state: { log: live.concat(new Array<number>(cost).fill(now)).sort((a, b) => a - b), seq: (s?.seq ?? 0) + cost }, ttlMs: ttl(win) };
  },
};
