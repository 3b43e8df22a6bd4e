// The over-admission bound the flood bench and the soak judge against, in one place: the failure path's documented bound plugs in here.

/**
 * The most one subject may be admitted past its limit, over one window, by `instances` instances
 * that use default failure options, while the store is slow, overloaded or gone.
 *
 * Issue 24 asks for a default under which neither an outage nor a flood turns limits off, e.g.
 * local shares (`limit / instances` each) while the store cannot decide. Such a fleet admits at
 * most one more limit's worth per window: each instance its share, counted from zero when the
 * store went away. That is the bound used here until docs/failure-modes.md documents the one the
 * failure path keeps; when it does, change this function (and only this one): `pnpm soak` and the
 * flood section of `pnpm bench` both read it.
 */
export function overAdmissionBound(limit: number, instances: number): number {
  return instances * Math.max(1, Math.floor(limit / instances));
}

/** The margin over the store's deadline any answer may take (issue 24), besides its process's own loop stall. */
export const DEADLINE_MARGIN_MS = 50;
