// concurrency in memory: the twin of concurrency.lua, step for step (leases held while their expiry is after now).
import type { LeaseLimit, Twin, TwinWrite } from '../types';
import { ttl } from '../twin-math';
import { MAX_LEASE_COST } from '../../base/validate';

/** The leases of one subject: member ('<token>.<k>') -> the ms it expires at. */
export interface ConcurrencyState {
  m: Record<string, number>;
}

/** A denial's longest wait (concurrency.lua: RETRY_MS). */
const RETRY_MS = 1000;

function held(s: ConcurrencyState | undefined, now: number): number {
  let n = 0;
  if (s) for (const member in s.m) if (s.m[member] > now) n++;
  return n;
}

/** The members still held (expiry after now): ZREMRANGEBYSCORE -inf now, as the script's write does. */
function alive(s: ConcurrencyState | undefined, now: number): Record<string, number> {
  const m: Record<string, number> = {};
  if (s) for (const member in s.m) if (s.m[member] > now) m[member] = s.m[member];
  return m;
}

export const concurrency: Twin<ConcurrencyState, LeaseLimit> = {
  check(s, now, { capacity: cap, leaseMs }, cost, token) {
    const n = held(s, now);
    if (cost > cap || cost > MAX_LEASE_COST) return { allowed: false, remaining: Math.max(0, cap - n), resetMs: leaseMs, retryAfterMs: -1 };
    if (n + cost <= cap) {
      if (cost === 0) return { allowed: true, remaining: cap - n, resetMs: leaseMs, retryAfterMs: 0 };
      const m = alive(s, now);
      for (let k = 1; k <= cost; k++) m[`${token}.${k}`] = now + leaseMs;
      return { allowed: true, remaining: cap - n - cost, resetMs: leaseMs, retryAfterMs: 0, next: { state: { m }, ttlMs: ttl(leaseMs) } };
    }
    let first = Infinity;
    for (const member in s!.m) if (s!.m[member] > now && s!.m[member] < first) first = s!.m[member];
    const wait = first - now;
    return { allowed: false, remaining: Math.max(0, cap - n), resetMs: wait, retryAfterMs: Math.min(RETRY_MS, wait) };
  },
  refund() {
    return undefined;
  },
  release(s, now, _limit: LeaseLimit, cost, token): TwinWrite<ConcurrencyState> | undefined {
    if (cost === 0 || !s) return undefined;
    const m = { ...s.m };
    // No lease has more than MAX_LEASE_COST members (concurrency.lua: the same bound).
    for (let k = 1; k <= Math.min(cost, MAX_LEASE_COST); k++) delete m[`${token}.${k}`];
    // ZREM keeps the key's TTL, which is past every member's expiry: any TTL past them decides the same.
    let last = 0;
    for (const member in m) last = Math.max(last, m[member]);
    return { state: { m }, ttlMs: ttl(last - now) };
  },
  renew(s, now, { leaseMs }: LeaseLimit, cost, token): TwinWrite<ConcurrencyState> | undefined {
    if (cost === 0 || !s) return undefined;
    const first = s.m[`${token}.1`];
    if (first === undefined || first <= now) return undefined;
    const m = { ...s.m };
    for (let k = 1; k <= Math.min(cost, MAX_LEASE_COST); k++) if (m[`${token}.${k}`] !== undefined) m[`${token}.${k}`] = now + leaseMs;
    return { state: { m }, ttlMs: ttl(leaseMs) };
  },
};
