// The states the observe layer reports, defined here so that the parts that hold them (breaker, fleet, shedder) and the reports (metrics, health) both import them downward.

/** A circuit breaker's state. */
export type BreakerState = 'closed' | 'open' | 'half-open';

/** What a limiter reads of its fleet. */
export interface FleetView {
  /** The live instances last counted (this one included), at least 1; 1 before the first count (source 'unlearned'). */
  readonly instances: number;
  /** Date.now() of the last count, undefined before the first. */
  readonly learnedAt: number | undefined;
  /** Announcements that failed (the store away or slow): the last count is kept meanwhile. */
  readonly failures: number;
  /** The limiter prefix whose instances are counted. */
  readonly prefix: string;
  /** True when the count is learned through the store; false for a fixed `instances` (or a store that cannot announce). */
  readonly learning: boolean;
  /**
   * Where the count comes from (docs/failure-modes.md#instances-learned-through-the-store):
   * 'fixed' (`instances: N`, or a store that cannot announce), 'learned' (counted through the store),
   * 'recorded' (not counted yet: the last count this process recorded for the prefix on this
   * connection), 'declared' (the app's `minInstances` floor), 'unlearned' (none of these: each
   * subject's local share is 1 unit per limit).
   */
  readonly source: FleetSource;
}

/** Where a fleet's count comes from: see FleetView.source. */
export type FleetSource = 'fixed' | 'learned' | 'recorded' | 'declared' | 'unlearned';

/** What the shedder reports for a health route. */
export interface SheddingStats {
  /** 0: nothing shed; 1: background shed; 2: background and default shed. */
  readonly level: number;
  /** The last sample: event-loop utilisation (0 to 1) and how late its timer fired (ms). */
  readonly utilization: number;
  readonly delayMs: number;
  /** Requests shed so far, by class. */
  readonly shed: { readonly background: number; readonly default: number };
}
