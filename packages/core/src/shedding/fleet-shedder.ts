// Fleet load shedding: one in-flight budget for every instance, in the store, with a share only higher priority classes may use.
import type { Duration } from '../base/duration';
import { resolveConcurrency } from '../model/concurrency';
import type { Decision } from '../model/decision';
import { invalidOption } from '../base/errors';
import { limiterFrom, type EngineLimiter } from '../engine/limiter';
import type { ResolvedLimiterOptions } from '../engine/options';
import { checkOptionNames, optionNames } from '../base/validate';
import { PRIORITIES, type Priority } from './load-shedder';

export interface FleetOptions {
  /** Requests in flight at once across every instance on this store. A whole number from 1. Required. */
  limit: number;
  /**
   * The share of `limit` each class may fill: 'default' up to `default` (e.g. 0.8 keeps the last 20%
   * for critical traffic), 'background' up to `background`; 'critical' may use all of it. Each from
   * 0.01 to 1, background at most default. Default `{ default: 0.8, background: 0.5 }`.
   */
  shares?: { default?: number; background?: number };
  /** A lease's length (see `concurrency.leaseMs`): how long a dead instance's requests keep their slots. Default 30_000 ms. */
  leaseMs?: Duration;
  /** The longest a slot's lease is renewed for (see `concurrency.maxHoldMs`): a hung request frees its fleet slot after this. Default 600_000 ms. */
  maxHoldMs?: Duration;
}

const FLEET_OPTION_NAMES = optionNames<FleetOptions>()(['limit', 'shares', 'leaseMs', 'maxHoldMs']);

export interface ResolvedFleet {
  readonly limit: number;
  readonly shares: Readonly<Record<Priority, number>>;
  readonly leaseMs: Duration;
  readonly maxHoldMs: Duration | undefined;
}

function share(option: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0.01 || value > 1) invalidOption(option, value, 'a number from 0.01 to 1');
  return value;
}

export function resolveFleet(raw: FleetOptions | undefined): ResolvedFleet | undefined {
  if (raw === undefined) return undefined;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) invalidOption('fleet', raw, 'an object such as { limit: 1000 }');
  checkOptionNames('fleet', raw, FLEET_OPTION_NAMES);
  const shares = raw.shares ?? {};
  if (!shares || typeof shares !== 'object' || Array.isArray(shares)) invalidOption('fleet.shares', shares, 'an object { default, background }');
  checkOptionNames('fleet.shares', shares, ['default', 'background'] as const);
  const def = share('fleet.shares.default', shares.default, 0.8);
  const background = share('fleet.shares.background', shares.background, Math.min(0.5, def));
  if (background > def) invalidOption('fleet.shares.background', background, `at most fleet.shares.default (${def})`);
  // The limit itself is checked by the in-flight limit's own validator (resolveFleetLimiters).
  resolveConcurrency({ limit: raw.limit, leaseMs: raw.leaseMs, maxHoldMs: raw.maxHoldMs }, 'fleet');
  return { limit: raw.limit, shares: { critical: 1, default: def, background }, leaseMs: raw.leaseMs ?? 30_000, maxHoldMs: raw.maxHoldMs };
}

/** The fleet's subject and scope: one budget for every caller and route. */
const SUBJECT = 'fleet';
const SCOPE = '<fleet>';

/**
 * One lease limiter per class over the same key: each counts every request in flight (every
 * class's), and admits only while the total stays within its class's share of the budget.
 */
export class FleetShedder {
  private readonly byClass: Readonly<Record<Priority, EngineLimiter>>;

  constructor(fleet: ResolvedFleet, base: ResolvedLimiterOptions) {
    const limiterOf = (priority: Priority): EngineLimiter => {
      const capacity = Math.max(1, Math.floor(fleet.limit * fleet.shares[priority]));
      const concurrency = resolveConcurrency({ limit: capacity, leaseMs: fleet.leaseMs, maxHoldMs: fleet.maxHoldMs, name: 'fleet' }, 'fleet');
      // No rate limit and no block cache: only the lease, decided in the store like any other.
      return limiterFrom({ ...base, limits: [], maxCost: Infinity, blockCacheSize: 0, hotKeys: undefined, lockout: undefined, concurrency });
    };
    this.byClass = Object.fromEntries(PRIORITIES.map((p) => [p, limiterOf(p)])) as Record<Priority, EngineLimiter>;
  }

  /** For the metrics (`floodgate.shed`) and health: requests the budget refused, by class. */
  readonly by = 'fleet' as const;
  readonly shedCounts: Record<Priority, number> = { critical: 0, default: 0, background: 0 };

  /** One slot of the fleet's budget for a request of this class, or the refusal. */
  acquire(priority: Priority): Promise<Decision> {
    return this.byClass[priority].consume(SUBJECT, { cost: 1, scope: SCOPE }).then((decision) => {
      if (!decision.allowed && decision.reason !== 'fail-closed') this.shedCounts[priority]++;
      return decision;
    });
  }
}
