// The monotonic clock (performance.now()) read through the `performance` object there was when the reader was made, not through the global each time.

/** What a monotonic reader needs of `performance`. */
export interface MonotonicSource {
  now(): number;
}

/**
 * `performance`, as it is now. On Node.js the global `performance` is an accessor (a lazy getter on
 * the global object), so each `performance.now()` on a hot path pays a global load that cannot be
 * inlined and a getter call before the clock itself: about 300 instructions a read, measured with
 * callgrind (scripts/redis-decision-profile.mjs), five reads a Redis decision. A class that reads the
 * clock per call keeps this object from its construction and calls `now()` on it. Taken at
 * construction, not at module load, so that fake timers installed before a store or limiter is
 * made (jest.useFakeTimers) still drive it.
 */
export function monotonicSource(): MonotonicSource {
  return performance;
}
