// The over-admission bound the flood bench and the soak judge against, in one place: the failure path's documented bound plugs in here.

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
export function overAdmissionBound(limit: number, instances: number): number {
  return instances * Math.max(1, Math.floor(limit / instances));
}

/** The margin over the store's deadline any answer may take (issue 24), besides its process's own loop stall. */
export const DEADLINE_MARGIN_MS = 50;
