// Runs the in-memory twins over N limits, all-or-nothing (or a refund over all of them): the same steps as lua/main.lua.
import { ALGORITHM, LIMIT_KINDS, type LimitKind, type StoreLimit } from './registry';
import type { LimitResult, Twin, TwinCheck, TwinWrite } from './types';

/** Each algorithm's twin, by name (from the registry). */
export const TWINS = Object.fromEntries(LIMIT_KINDS.map((name) => [name, ALGORITHM[name].twin])) as Readonly<Record<LimitKind, Twin<unknown>>>;

export interface TwinEvaluation {
  allowed: boolean;
  checks: TwinCheck<unknown>[];
}

/** Checks every limit against its state; the caller writes `checks[i].next` only when `allowed`. */
export function evaluateTwins(
  states: readonly unknown[],
  limits: readonly StoreLimit[],
  cost: number,
  now: number,
  token?: string,
): TwinEvaluation {
  // A plain loop: every decision on the memory store runs it.
  let allowed = true;
  const checks: TwinCheck<unknown>[] = new Array(limits.length);
  for (let i = 0; i < limits.length; i++) {
    const limit = limits[i];
    const check = TWINS[limit.algorithm].check(states[i], now, limit, cost, token);
    if (!check.allowed) allowed = false;
    checks[i] = check;
  }
  return { allowed, checks };
}

/**
 * Shaping (mode 'hold', as lua/main.lua's 'h'): a consume the limits denied, held when every
 * denying limit is a rate limit that would admit it within `maxDelayMs`. Held, each such limit's
 * check carries its debit (the reserved future slot) as `next`, figures of the state after it and
 * its own wait as retryAfterMs (read by the store, which writes `next` of every check); the
 * request's delay is the longest. Undefined when it cannot be held (the denial stands).
 */
export function holdTwins(states: readonly unknown[], limits: readonly StoreLimit[], evaluation: TwinEvaluation, cost: number, now: number, maxDelayMs: number): { checks: TwinCheck<unknown>[]; delayMs: number } | undefined {
  let delayMs = 0;
  for (let i = 0; i < limits.length; i++) {
    const check = evaluation.checks[i];
    if (check.allowed) continue;
    if (ALGORITHM[limits[i].algorithm].family !== 'rate' || check.retryAfterMs <= 0 || check.retryAfterMs > maxDelayMs) return undefined;
    delayMs = Math.max(delayMs, check.retryAfterMs);
  }
  const checks = evaluation.checks.map((check, i) => {
    if (check.allowed) return check;
    const twin = TWINS[limits[i].algorithm];
    const next = twin.debit!(states[i], now, limits[i], cost);
    const { remaining, resetMs } = twin.check(next.state, now, limits[i], 0);
    return { allowed: true, remaining, resetMs, retryAfterMs: check.retryAfterMs, next };
  });
  return { checks, delayMs };
}

export interface TwinRefund {
  /** Per limit: the state to write, null to delete the key, undefined to leave it as it is. */
  writes: (TwinWrite<unknown> | null | undefined)[];
  /** Per limit: what is left after the refund (allowed, retryAfterMs 0). */
  results: LimitResult[];
}

/** Gives `cost` charged at `at` back to every limit; the figures are a cost-0 check of the state left (as lua/main.lua). */
export function refundTwins(states: readonly unknown[], limits: readonly StoreLimit[], cost: number, now: number, at: number): TwinRefund {
  const writes = limits.map((limit, i) => TWINS[limit.algorithm].refund(states[i], now, limit, cost, at));
  const results = limits.map((limit, i) => {
    const w = writes[i];
    const left = w === undefined ? states[i] : w === null ? undefined : w.state;
    const { remaining, resetMs } = TWINS[limit.algorithm].check(left, now, limit, 0);
    return { allowed: true, remaining, resetMs, retryAfterMs: 0 };
  });
  return { writes, results };
}

/**
 * Settles a reservation of every limit (rate limits only): a negative `delta` (actual below the
 * reserved cost) refunded as of `at`, a positive one debited now, past the limit if need be; the
 * figures are a cost-0 check of the state left (as lua/main.lua's mode 's').
 */
export function settleTwins(states: readonly unknown[], limits: readonly StoreLimit[], delta: number, now: number, at: number): TwinRefund {
  const writes = limits.map((limit, i) => {
    const twin = TWINS[limit.algorithm];
    if (delta < 0) return twin.refund(states[i], now, limit, -delta, at);
    if (delta === 0) return undefined;
    if (!twin.debit) throw new Error(`${limit.algorithm} takes no debit: a settle goes to rate limits only`);
    return twin.debit(states[i], now, limit, delta);
  });
  const results = limits.map((limit, i) => {
    const w = writes[i];
    const left = w === undefined ? states[i] : w === null ? undefined : w.state;
    const { remaining, resetMs } = TWINS[limit.algorithm].check(left, now, limit, 0);
    return { allowed: true, remaining, resetMs, retryAfterMs: 0 };
  });
  return { writes, results };
}

/**
 * Releases or renews the `cost` slots leased under `token` in every limit (all of a lease family:
 * the limiter sends these to its lease limits only); the figures are a cost-0 check of the state left.
 */
export function leaseTwins(states: readonly unknown[], limits: readonly StoreLimit[], cost: number, now: number, token: string, op: 'release' | 'renew'): TwinRefund {
  const writes = limits.map((limit, i) => {
    const twin = TWINS[limit.algorithm];
    const apply = op === 'release' ? twin.release : twin.renew;
    if (!apply) throw new Error(`${limit.algorithm} holds no leases: a ${op} goes to lease limits only`);
    return apply(states[i], now, limit, cost, token);
  });
  const results = limits.map((limit, i) => {
    const w = writes[i];
    const { remaining, resetMs } = TWINS[limit.algorithm].check(w === undefined ? states[i] : w.state, now, limit, 0);
    return { allowed: true, remaining, resetMs, retryAfterMs: 0 };
  });
  return { writes, results };
}
