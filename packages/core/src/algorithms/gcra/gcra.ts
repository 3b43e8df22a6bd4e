// gcra in memory: the twin of gcra.lua, step for step (microsecond TAT, integer arithmetic).
import type { Twin } from '../types';
import { ttl } from '../twin-math';

/** The theoretical arrival time in microseconds. */
export type GcraState = number;

/** The emission interval in whole microseconds (Lua: interval). */
const interval = (rate: number) => Math.max(1, Math.floor(1e6 / rate + 0.5));

export const gcra: Twin<GcraState> = {
  check(s, now, { capacity: cap, period: rate }, cost) {
    const T = interval(rate);
    const tau = cap * T;
    const nowUs = now * 1000;
    let tat = s ?? nowUs;
    if (tat < nowUs) tat = nowUs;
    const diff = tat + cost * T - nowUs;
    if (diff <= tau) {
      return {
        allowed: true,
        remaining: Math.floor((tau - diff) / T),
        resetMs: Math.ceil(diff / 1000),
        retryAfterMs: 0,
        next: { state: nowUs + diff, ttlMs: ttl(diff / 1000) },
      };
    }
    return {
      allowed: false,
      remaining: Math.max(0, Math.floor((tau - (tat - nowUs)) / T)),
      resetMs: Math.ceil((tat - nowUs) / 1000),
      retryAfterMs: cost <= cap ? Math.max(1, Math.ceil((diff - tau) / 1000)) : -1,
    };
  },
  refund(s, now, { period: rate }, cost) {
    const nowUs = now * 1000;
    if (cost === 0 || s === undefined || s <= nowUs) return undefined;
    const back = s - cost * interval(rate);
    if (back <= nowUs) return null;
    return { state: back, ttlMs: ttl((back - nowUs) / 1000) };
  },
};
