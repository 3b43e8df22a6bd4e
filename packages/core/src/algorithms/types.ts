// The contract every algorithm keeps: its descriptor, its in-memory twin and what its Lua script returns.

/** What a window algorithm's twin reads of a limit: `capacity` units per `windowMs`. */
export interface WindowLimit {
  readonly capacity: number;
  readonly windowMs: number;
  /**
   * fixed-window only: windows that follow the calendar (option `window`) instead of
   * floor(now / windowMs); `windowMs` is then the longest period, for what needs one number.
   */
  readonly calendar?: CalendarPeriods;
}

/** The periods of a calendar window around one instant: boundaries in ms, ascending, and as the script takes them. */
export interface CalendarSpan {
  /** The previous period's start, the current one's start and end, the next one's end. */
  readonly boundaries: readonly number[];
  /** The same, comma-separated: the `period` a fixed-window script call carries. */
  readonly text: string;
}

/**
 * A calendar window's periods (calendar/calendar-window.ts), computed in TypeScript from the
 * platform's time-zone database: Lua in Redis has none, so the script is sent the boundaries around
 * the application's clock and picks the period by its own TIME; the twin picks by its clock alike.
 */
export interface CalendarPeriods {
  /** What defines the periods ('month@America/New_York@d17 09:00:00'): equal ids, equal periods. */
  readonly id: string;
  /** The boundaries around `now` (ms): the period holding `now` and one either side. */
  around(now: number): CalendarSpan;
  /** The length in ms of the period that ends at `end` (a boundary), for headers that state the window. */
  lengthEnding(end: number): number;
}

/** What a rate algorithm's twin reads of a limit: a burst of `capacity` units, refilled at `refillPerSecond`. */
export interface RateLimit {
  readonly capacity: number;
  readonly refillPerSecond: number;
}

/** What a lease twin (concurrency) reads of a limit: `capacity` slots in flight, each lease held `leaseMs`. */
export interface LeaseLimit {
  readonly capacity: number;
  readonly leaseMs: number;
}

/** What a twin of this family reads of a limit. */
export type FamilyLimit<F extends AlgorithmFamily> = F extends 'window' ? WindowLimit : F extends 'rate' ? RateLimit : LeaseLimit;

/** What some twin reads of a limit: a window, a rate or a lease limit, each field in its unit. */
export type TwinLimit = WindowLimit | RateLimit | LeaseLimit;

/** What one limit says about one request. All times in whole milliseconds from now. */
export interface LimitResult {
  allowed: boolean;
  /** Units left after this request (allowed) or now (denied). Never negative. */
  remaining: number;
  /** Until the quota is fully restored if no further request arrives. */
  resetMs: number;
  /** Until a request of this cost would be admitted; 0 when allowed, -1 when it never can be. */
  retryAfterMs: number;
  /** Set when the request read an override (StoreRequest.override): the capacity in force for it. */
  limit?: number;
}

/** Comparison slack for floating-point refill arithmetic (same constant in Lua). */
export const EPSILON = 1e-9;

/**
 * An algorithm's in-memory twin: check() reads the state and never mutates it; it returns the
 * state to write when the request is admitted. The Lua script follows the same steps in the same
 * order so that both decide identically for the same state, clock and cost.
 */
export interface Twin<S, L extends TwinLimit = TwinLimit> {
  /** `token`: the lease's id, for a lease family (concurrency); rate and window twins ignore it. */
  check(state: S | undefined, now: number, limit: L, cost: number, token?: string): TwinCheck<S>;
  /**
   * Gives back `cost` units charged by a consume decided at `at` (store clock, ms), as if it had not
   * happened: never below zero, never past a full limit. Returns the state to write, `null` when the
   * key is to go (the script's write empties it), or undefined when nothing changes (then nothing is
   * written, as on a missing key). The script's `refund` takes the same steps.
   */
  refund(state: S | undefined, now: number, limit: L, cost: number, at: number): TwinWrite<S> | null | undefined;
  /**
   * Window and rate families (required there): charges `cost` units now whatever is left, past the
   * limit if need be: a settle above its reservation (debt, which later checks see as a limit over
   * its capacity). Returns the state to write; the script's `debit` takes the same steps.
   */
  debit?(state: S | undefined, now: number, limit: L, cost: number): TwinWrite<S>;
  /**
   * Optional, for a state of plain number fields: copies `from`'s fields into `into`, the stored
   * state, so that an admission rewrites it in place (MemoryStore). A new state object per
   * admission is one the collector must keep (an older entry points to it) and, with many callers,
   * copy and promote; the fields written in place are not.
   */
  assign?(into: S, from: S): void;
  /** Lease family only: gives back the `cost` slots leased under `token` (the script's `release`). */
  release?(state: S | undefined, now: number, limit: L, cost: number, token: string): TwinWrite<S> | undefined;
  /** Lease family only: a lease still held runs `leaseMs` from now again (the script's `renew`). */
  renew?(state: S | undefined, now: number, limit: L, cost: number, token: string): TwinWrite<S> | undefined;
}

/** A state to write and its time to live (ms). */
export interface TwinWrite<S> {
  state: S;
  ttlMs: number;
}

export interface TwinCheck<S> extends LimitResult {
  /** New state and its time to live (ms) when admitted. */
  next?: TwinWrite<S>;
}

/**
 * Which options an algorithm takes, and so which limit its twin reads:
 * - 'window': `limit` per `windowMs` (WindowLimit).
 * - 'rate': `burst` and `refillPerSecond` (RateLimit).
 * - 'lease': `limit` slots in flight (option `concurrency`), each held `leaseMs` (LeaseLimit).
 *   Its chunk also defines `release` and `renew`, and it is not an `algorithm` option's value.
 */
export type AlgorithmFamily = 'window' | 'rate' | 'lease';

/**
 * Everything core knows about one algorithm, in its folder (algorithms/<name>/index.ts). The
 * registry (algorithms/registry.ts) lists the descriptors and gives each its numeric id; options,
 * stores, failure policy, hot keys and the Lua scripts all read them from there.
 */
export interface AlgorithmDescriptor<N extends string = string, S = unknown, F extends AlgorithmFamily = AlgorithmFamily> {
  /** The `algorithm` option's value, and the name of its folder and of its `.lua` file. */
  readonly name: N;
  /**
   * The last part of every key of this algorithm (`<prefix>:{<subject>}:<policy>.<keySuffix>`).
   * Stored keys depend on it: changing it orphans every caller's state. Unique in the registry.
   */
  readonly keySuffix: string;
  readonly family: F;
  /** The in-memory twin: decides exactly as the Lua chunk does for the same state, clock and cost. */
  readonly twin: Twin<S, FamilyLimit<F>>;
  /**
   * Hot-key mode: ms from an admitted consume (its result for this limit) until the edge of the
   * window the units were charged to, past which a leased unit no longer stands for one the limit
   * still counts; undefined when the algorithm has no such edge (the lease then runs its leaseMs).
   * `at`: the store's clock when it decided (StoreResult.at).
   */
  leaseEdgeMs?(admitted: LimitResult, limit: FamilyLimit<F>, at: number): number;
  /**
   * The largest `limit` (or `burst`) it accepts, when below MAX_UNITS: the bound on one decision's
   * work for an algorithm whose writes grow with the cost (see docs/algorithms.md). Default MAX_UNITS.
   */
  readonly maxLimit?: number;
  /**
   * The Lua chunk (generated from `<name>.lua`): it defines `local function check(key, now, cap, period, cost)`
   * and `local function refund(key, now, cap, period, cost, at)`, where `period` is the family's one
   * number: `windowMs`, `refillPerSecond` or `leaseMs` (see periodOf in registry.ts, which encodes it);
   * a lease chunk's check takes a sixth argument, `token`, and it also defines `release` and
   * `renew(key, now, cap, period, cost, token)`.
   */
  readonly lua: string;
}

/** Keeps a descriptor's literal `name`, so that the registry can derive the AlgorithmName union from it. */
export function defineAlgorithm<const N extends string, S, const F extends AlgorithmFamily>(descriptor: AlgorithmDescriptor<N, S, F>): AlgorithmDescriptor<N, S, F> {
  return descriptor;
}
