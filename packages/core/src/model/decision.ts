// The Decision: what the limiter answers for one request. A limit is a resolved Decision, never a rejection.
import type { CalendarPeriods, LimitResult } from '../algorithms/types';
import type { ResolvedLimit } from './limit';
import type { Lease } from './concurrency';

export type DecisionReason =
  /** Admitted by the store. */
  | 'allowed'
  /** Denied by the store: over the limit. */
  | 'limited'
  /** Denied locally: this caller was denied until a time not yet reached (no store call). */
  | 'blocked'
  /** Denied by the store's progressive lock-out (option `lockout`): refused too often; retryAfterMs is the time left locked. */
  | 'locked'
  /** Denied: the cost is larger than the smallest limit, so it can never be admitted. */
  | 'cost-exceeds-limit'
  /** Store failed; the failure mode served the request without limiting. */
  | 'fail-open'
  /** Store failed; the failure mode refused the request (503). */
  | 'fail-closed'
  /** Store failed; this instance limited the request from memory with its local share. */
  | 'fail-local'
  /** Shed: this instance is overloaded and the route's priority class is shed (503, option `shedding`). */
  | 'shed';

/** One limit's view of the request. */
export interface LimitDecision {
  readonly policy: string;
  readonly allowed: boolean;
  readonly limit: number;
  readonly windowMs: number;
  readonly remaining: number;
  readonly resetMs: number;
  /** 0 when admitted; -1 when this cost can never be admitted. */
  readonly retryAfterMs: number;
  /** Set for the in-flight limit (option `concurrency`): `limit` counts requests in flight, and `windowMs` is the lease's length. */
  readonly quotaUnit?: 'concurrent-requests';
}

export interface Decision {
  readonly allowed: boolean;
  readonly reason: DecisionReason;
  /** True when the shared store did not decide (fail-*): quota fields are local or absent, and no quota headers are sent. */
  readonly degraded: boolean;
  /** The most restrictive limit's figures; null when no limit was evaluated (fail-open, fail-closed). */
  readonly limit: number | null;
  readonly remaining: number | null;
  readonly resetMs: number | null;
  /** ms until a request of the same cost would be admitted; 0 when admitted. */
  readonly retryAfterMs: number;
  /** The most restrictive limit's name; null when none was evaluated. */
  readonly policy: string | null;
  /** Every limit's figures, for headers that list every policy (draft-10). Empty when none was evaluated. */
  readonly limits: readonly LimitDecision[];
  /**
   * The store's clock (ms) when it charged this request: set exactly when the shared store charged
   * it (an admitted consume, not degraded, not from the block cache). Pass it to `limiter.refund`
   * to give the units back; a decision without it charged nothing there.
   */
  readonly at?: number;
  /**
   * The slots this request holds in flight (option `concurrency`), set when it was admitted with
   * a lease: call `release()` when the request ends (the HTTP adapters do, on finish or close).
   */
  readonly lease?: Lease;
  /**
   * Shaping (`maxDelayMs`, docs/shaping.md): set when the request was admitted for a slot ahead
   * instead of refused: serve it this many ms from now (its units are charged now; a refund gives
   * them back). Absent when it was admitted now.
   */
  readonly delayMs?: number;
}

/**
 * Builds a Decision from per-limit results: the most restrictive limit speaks for the request. `at`:
 * see Decision.at. `clockMs`: the store's clock when it decided (StoreResult.at), from which a
 * calendar window's figures give the length of the period running (its `windowMs`).
 */
export function toDecision(
  limits: readonly ResolvedLimit[],
  allowed: boolean,
  results: readonly LimitResult[],
  cost: number,
  reason?: DecisionReason,
  degraded = false,
  at?: number,
  clockMs?: number,
): Decision {
  const perLimit: LimitDecision[] = new Array(results.length);
  let pick: LimitDecision | undefined;
  for (let i = 0; i < results.length; i++) {
    const r = results[i];
    const l = limits[i];
    // A limit that would have admitted was not charged when another denied.
    const remaining = !allowed && r.allowed ? r.remaining + cost : r.remaining;
    const retryAfterMs = r.allowed ? 0 : r.retryAfterMs;
    const windowMs = calendarLength(l, r, clockMs);
    // Every field in the literal: one added afterwards would move the object to a new shape and allocate room for it.
    const d: LimitDecision =
      l.algorithm === 'concurrency'
        ? { policy: l.name, allowed: r.allowed, limit: l.limit, windowMs, remaining, resetMs: r.resetMs, retryAfterMs, quotaUnit: 'concurrent-requests' }
        : { policy: l.name, allowed: r.allowed, limit: r.limit ?? l.limit, windowMs, remaining, resetMs: r.resetMs, retryAfterMs };
    perLimit[i] = d;
    if (pick === undefined) pick = d;
    else if (allowed) {
      // An admitted request's single-policy figures (draft-6, legacy) are a rate limit's: slots in
      // flight free when requests end, not at a reset a client could pace on.
      if (d.quotaUnit !== undefined) continue;
      if (pick.quotaUnit !== undefined) pick = d;
      if (d.remaining < pick.remaining || (d.remaining === pick.remaining && d.resetMs > pick.resetMs)) pick = d;
    } else if (!d.allowed && (pick.allowed || rank(d.retryAfterMs) > rank(pick.retryAfterMs))) {
      pick = d;
    }
  }
  const p = pick!;
  const never = !allowed && p.retryAfterMs < 0;
  const why = reason ?? (allowed ? 'allowed' : never ? 'cost-exceeds-limit' : 'limited');
  const retryAfterMs = allowed ? 0 : never ? -1 : p.retryAfterMs;
  // `at` only when charged (absent, not undefined, otherwise), written in the literal as the limits' fields are.
  return at !== undefined
    ? { allowed, reason: why, degraded, limit: p.limit, remaining: p.remaining, resetMs: p.resetMs, retryAfterMs, policy: p.policy, limits: perLimit, at }
    : { allowed, reason: why, degraded, limit: p.limit, remaining: p.remaining, resetMs: p.resetMs, retryAfterMs, policy: p.policy, limits: perLimit };
}

/** A limit's window: a calendar window's is the period that ends at its reset (a month has 28 to 31 days, a day 23 to 25 hours). */
function calendarLength(l: ResolvedLimit, r: LimitResult, clockMs: number | undefined): number {
  // Only a window limit has one (a rate or lease limit never carries the field): a plain read, no `in` test.
  const calendar = (l.store as { readonly calendar?: CalendarPeriods }).calendar;
  return calendar === undefined || clockMs === undefined ? l.windowMs : calendar.lengthEnding(clockMs + r.resetMs);
}

const rank = (retry: number) => (retry < 0 ? Infinity : retry);

/** A decision made without any limit's figures (fail-open, fail-closed). */
export function bareDecision(allowed: boolean, reason: DecisionReason, retryAfterMs = 0): Decision {
  return {
    allowed,
    reason,
    degraded: true,
    limit: null,
    remaining: null,
    resetMs: null,
    retryAfterMs,
    policy: null,
    limits: [],
  };
}

/** A decision the lock-out denied: the limits' figures (nothing charged), and the wait is the lock's, when longer. */
export function lockedDecision(decision: Decision, lockedMs: number): Decision {
  return { ...decision, allowed: false, reason: 'locked', retryAfterMs: Math.max(decision.retryAfterMs, Math.ceil(lockedMs)) };
}
