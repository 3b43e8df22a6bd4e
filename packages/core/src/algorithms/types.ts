// The contract shared by every algorithm's in-memory twin and its Lua script.

export const ALGORITHMS = [
  'fixed-window',
  'sliding-window-log',
  'sliding-window-counter',
  'token-bucket',
  'gcra',
] as const;

export type AlgorithmName = (typeof ALGORITHMS)[number];

/** Numeric ids sent to Lua in ARGV; the order is part of the script protocol. */
export const ALGORITHM_ID: Record<AlgorithmName, number> = {
  'fixed-window': 1,
  'sliding-window-log': 2,
  'sliding-window-counter': 3,
  'token-bucket': 4,
  gcra: 5,
};

/**
 * One limit as the store sees it. `capacity` is the limit (or burst); `period` is the window in ms
 * for window algorithms, or the refill rate in units per second for token-bucket and gcra.
 */
export interface StoreLimit {
  readonly algorithm: AlgorithmName;
  readonly capacity: number;
  readonly period: number;
}

/** What one limit says about one request. All times in whole milliseconds from now. */
export interface LimitResult {
  allowed: boolean;
  /** Units left after this request (allowed) or now (denied). Never negative. */
  remaining: number;
  /** Until the quota is fully restored if no further request arrives. */
  resetMs: number;
  /** Until a request of this cost would be admitted; 0 when allowed, -1 when it never can be. */
  retryAfterMs: number;
}

/** Comparison slack for floating-point refill arithmetic (same constant in Lua). */
export const EPSILON = 1e-9;

/**
 * An algorithm's in-memory twin: check() reads the state and never mutates it; it returns the
 * state to write when the request is admitted. The Lua script follows the same steps in the same
 * order so that both decide identically for the same state, clock and cost.
 */
export interface Twin<S> {
  check(state: S | undefined, now: number, limit: StoreLimit, cost: number): TwinCheck<S>;
}

export interface TwinCheck<S> extends LimitResult {
  /** New state and its time to live (ms) when admitted. */
  next?: { state: S; ttlMs: number };
}
