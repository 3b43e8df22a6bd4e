// gcra in memory: the twin of gcra.lua, step for step (TAT as whole ms + fraction, sums relative to now).
import { EPSILON, type RateLimit, type Twin } from '../types';
import { ttl } from '../twin-math';

/** The theoretical arrival time: whole ms plus a fraction of a ms in [0, 1) (Lua: '<ms>:<fraction>'). */
export interface GcraState {
  readonly ms: number;
  readonly fraction: number;
}

/** The TAT ahead of now in ms, 0 when absent or past (Lua: ahead). */
function ahead(s: GcraState | undefined, now: number): number {
  if (s === undefined) return 0;
  return Math.max(0, s.ms - now + s.fraction);
}

/** The TAT `a` ms ahead of now, split into whole ms and fraction (Lua: save). */
function save(now: number, a: number): { state: GcraState; ttlMs: number } {
  const whole = Math.floor(a);
  return { state: { ms: now + whole, fraction: a - whole }, ttlMs: ttl(a) };
}

/** Units that fit after a TAT `from` ms ahead: the largest k with from + k * T <= tau + EPSILON (Lua: room). */
function room(from: number, tau: number, T: number): number {
  const k = Math.max(0, Math.floor((tau - from) / T + EPSILON));
  if (from + (k + 1) * T <= tau + EPSILON) return k + 1;
  if (k > 0 && from + k * T > tau + EPSILON) return k - 1;
  return k;
}

export const gcra: Twin<GcraState, RateLimit> = {
  check(s, now, { capacity: cap, refillPerSecond: rate }, cost) {
    const T = 1000 / rate;
    const tau = cap * T;
    const tat = ahead(s, now);
    const diff = tat + cost * T;
    if (diff <= tau + EPSILON) {
      return {
        allowed: true,
        remaining: room(diff, tau, T),
        resetMs: Math.ceil(diff - EPSILON),
        retryAfterMs: 0,
        next: save(now, diff),
      };
    }
    return {
      allowed: false,
      remaining: room(tat, tau, T),
      resetMs: Math.ceil(tat - EPSILON),
      retryAfterMs: cost <= cap ? Math.max(1, Math.ceil(diff - tau - EPSILON)) : -1,
    };
  },
  refund(s, now, { refillPerSecond: rate }, cost) {
    const tat = ahead(s, now);
    if (cost === 0 || tat <= 0) return undefined;
    const back = tat - cost * (1000 / rate);
    if (back <= EPSILON) return null;
    return save(now, back);
  },
  // The TAT moves past the burst if need be (debt): nothing fits until now catches up with it.
  debit(s, now, { refillPerSecond: rate }, cost) {
    return save(now, ahead(s, now) + cost * (1000 / rate));
  },
};
