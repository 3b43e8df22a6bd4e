// Reserve, then settle: the `settle` option, and what a settle answers (docs/quotas.md#reserve-then-settle).
import type { Decision, LimitDecision } from './decision';
import { parseDuration, type Duration } from '../base/duration';
import { invalidOption } from '../base/errors';
import type { ResolvedLimit } from './limit';
import { checkOptionNames, MAX_UNITS, optionNames, wholeNumber } from '../base/validate';
import { ALGORITHM } from '../algorithms/registry';

/** Bounds on settling a reserved cost (`limiter.reserve` / `limiter.settle`, and the adapters' `settle`). */
export interface SettleOptions {
  /**
   * The most one settle can charge: a larger actual cost is charged this much (SettleResult.capped),
   * so a handler's bug or a runaway response can put a subject at most this far into debt. A whole
   * number from 1. Default: the smallest limit or burst (debt of at most one full quota).
   */
  maxCost?: number;
  /**
   * How long after its reservation a request can be settled, and so how long its settle token is
   * remembered (the idempotency record). A later settle changes nothing (outcome 'expired'): the
   * reservation stays charged. From 1 s to 1 d. Default '15m'.
   */
  withinMs?: Duration;
}

export interface ResolvedSettle {
  readonly maxCost: number;
  readonly withinMs: number;
  /** True when the app set `settle` (the HTTP layer then offers `settle` to each admitted request). */
  readonly enabled: boolean;
}

const SETTLE_OPTION_NAMES = optionNames<SettleOptions>()(['maxCost', 'withinMs']);

/** `settle`, validated where it enters; `limits` are the rate limits, whose smallest is the default maxCost. */
export function resolveSettle(raw: SettleOptions | undefined, limits: readonly ResolvedLimit[]): ResolvedSettle {
  const smallest = Math.min(...limits.map((l) => l.limit));
  if (raw === undefined) return { maxCost: smallest, withinMs: 900_000, enabled: false };
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) invalidOption('settle', raw, 'an object such as { maxCost: 4000 } ({} for the defaults)');
  checkOptionNames('settle', raw, SETTLE_OPTION_NAMES);
  // sliding-window-log stores one entry per unit: a debit, like a consume, stays within its limit cap.
  const log = limits.find((l) => ALGORITHM[l.algorithm].maxLimit !== undefined);
  const top = log ? ALGORITHM[log.algorithm].maxLimit! : MAX_UNITS;
  const maxCost = raw.maxCost === undefined ? smallest : wholeNumber('settle.maxCost', raw.maxCost, 1, top);
  const withinMs = parseDuration('settle.withinMs', raw.withinMs ?? 900_000, 1_000, 86_400_000);
  return { maxCost, withinMs, enabled: true };
}

/**
 * What became of a settle: 'settled' (applied now), 'already-settled' (this reservation was settled
 * before: nothing changed), 'expired' (older than `settle.withinMs`: nothing changed, the reservation
 * stays charged), 'not-reserved' (the reservation was denied, degraded or not charged in the shared
 * store: nothing to settle), 'store-failed' (the store failed or its breaker skipped the call: the
 * reservation stays charged; the same settle may be tried again).
 */
export type SettleOutcomeName = 'settled' | 'already-settled' | 'expired' | 'not-reserved' | 'store-failed';

export interface SettleResult {
  /** True when this call changed the counts (outcome 'settled'). */
  readonly settled: boolean;
  readonly outcome: SettleOutcomeName;
  /**
   * The cost the reservation stands for after this call: when settled, the actual cost (at most
   * `settle.maxCost`); when expired or the store failed, the reserved cost (it stays charged); 0
   * when not reserved; null when already settled (the first settle decided it).
   */
  readonly charged: number | null;
  /** True when the actual cost was above `settle.maxCost` and `maxCost` was charged instead. */
  readonly capped: boolean;
  /** Each rate limit's figures after the settle (what is left, and when it resets); empty when the store did not answer. */
  readonly limits: readonly LimitDecision[];
}

/** An admitted request's reservation (`limiter.reserve`): settle it with the actual cost once known. */
export interface Reservation {
  /** The reservation's decision (a consume of the estimated cost). */
  readonly decision: Decision;
  /**
   * Replaces the reserved cost by `actual` (less: the difference is given back; more: it is charged
   * now, past the limit if need be, and later requests pay the debt back before they are admitted).
   * Applied once: a second call changes nothing ('already-settled'), however often it is made, from
   * wherever. Never rejects for a store failure ('store-failed', the reservation stays charged);
   * rejects with FG_INVALID_COST when `actual` is not a whole number from 0.
   */
  settle(actual: number): Promise<SettleResult>;
}

/** A settle token: unique per reservation (122 random bits), a letter first (the stores' token rule). */
export function newSettleToken(): string {
  return `S${globalThis.crypto.randomUUID().replace(/-/g, '')}`;
}
