// The over-admission bound the flood bench and the soak judge against, in one place: the failure path's documented bound plugs in here, and issue 49's goal.

/**
 * The most one subject may be admitted past its limit, over one window, by `instances` instances
 * that use default failure options, while the store is slow, overloaded or gone.
 *
 * The default failure behaviour (`failMode: 'local'`, `instances` learned through the store)
 * decides alone with local shares, `floor(limit / instances)` each, while the store cannot decide.
 * A fleet whose count is right admits at most one more limit's worth per window: each instance its
 * share, counted from zero when it began deciding alone. That is the bound
 * docs/failure-modes.md#the-bound-on-over-admission documents (its other rows: a fleet that grew
 * during an outage, or started during one, learned no count). `pnpm soak` and the flood section of
 * `pnpm bench` both read it from here.
 */
export function overAdmissionBound(limit: number, instances: number, unlearned = 0): number {
  return instances * Math.max(1, Math.floor(limit / instances)) + unlearned * UNLEARNED_SHARE;
}

/**
 * What one instance that has learned no count (started while the store was away, no count recorded
 * on its connection, no `minInstances`) admits locally per subject per window: one unit
 * (docs/failure-modes.md#the-bound-on-over-admission). The outage run's processes that join
 * halfway are such instances.
 */
export const UNLEARNED_SHARE = 1;

/** Issue 49's goal: under overload or an outage, at most this many times the limit admitted per subject per window. */
export const OVERLOAD_GOAL_RATIO = 1.25;

/** The margin over the store's deadline any answer may take (issue 24), besides its process's own loop stall. */
export const DEADLINE_MARGIN_MS = 50;
