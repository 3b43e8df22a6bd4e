// How many instances share a limit, learned through the store: each process announces itself under a key that expires, and counts the others.
import { randomBytes } from 'node:crypto';
import { fleetKey } from '../keys';
import type { Store } from '../stores/store';

/**
 * This process's id in every fleet it announces itself to: random, made once per process, so two
 * stores (or two clients) of one process to one Redis count as one instance, and a restarted
 * process is a new one (the old id ages out).
 */
export const INSTANCE_ID = randomBytes(12).toString('base64url');

/** An announcement is good for this many periods: a process that stops announcing (SIGKILL) leaves the count after about as many. */
export const ANNOUNCE_TTL_PERIODS = 3;

/**
 * After its first announcement an instance announces again at these delays (ms), then once per
 * period: instances that start together (a deploy, a fleet restarted during an attack) each see
 * the others within about a second instead of a whole period later.
 */
const EARLY_DELAYS_MS = [250, 1_000];

/** What a limiter reads of its fleet. */
export interface FleetView {
  /** The live instances last counted (this one included), at least 1; 1 before the first count. */
  readonly instances: number;
  /** Date.now() of the last count, undefined before the first. */
  readonly learnedAt: number | undefined;
  /** Announcements that failed (the store away or slow): the last count is kept meanwhile. */
  readonly failures: number;
  /** The limiter prefix whose instances are counted. */
  readonly prefix: string;
  /** True when the count is learned through the store; false for a fixed `instances` (or a store that cannot announce). */
  readonly learning: boolean;
}

type Announce = NonNullable<Store['announce']>;

/**
 * One prefix's announcement on one connection, shared by every limiter of this process that uses
 * that prefix on it (failure/store-runtime.ts): one timer, one count. The timer is unref'd and
 * holds the fleet weakly: when no limiter holds it any more, it stops.
 */
export class Fleet implements FleetView {
  instances = 1;
  readonly learning = true;
  learnedAt: number | undefined;
  failures = 0;
  private busy = false;
  /** The counts learned within the last announcement lifetime (performance.now()): `instances` is their largest. */
  private readonly recent: { count: number; at: number }[] = [];

  constructor(
    readonly prefix: string,
    private readonly announce: Announce,
    readonly periodMs: number,
    /** The count an earlier fleet of this prefix on this connection learned, if any: the start instead of 1. */
    known?: number,
    /** Told each count learned (the connection keeps the last one for the next fleet of this prefix). */
    private readonly learned: (count: number) => void = () => undefined,
  ) {
    if (known !== undefined) {
      this.instances = known;
      this.recent.push({ count: known, at: performance.now() });
    }
    const ref = new WeakRef(this);
    const delays = [0, ...EARLY_DELAYS_MS.filter((d) => d < periodMs)];
    let step = 0;
    const tick = (): void => {
      const fleet = ref.deref();
      if (!fleet) return;
      fleet.once();
      const delay = step < delays.length - 1 ? delays[step + 1] - delays[step] : periodMs;
      step++;
      setTimeout(tick, delay).unref();
    };
    setTimeout(tick, 0).unref();
  }

  /** One announcement; its answer is the new count. Never overlaps the previous one; a failure keeps the last count. */
  private once(): void {
    if (this.busy) return;
    this.busy = true;
    let pending: Promise<number>;
    try {
      pending = this.announce(fleetKey(this.prefix), INSTANCE_ID, ANNOUNCE_TTL_PERIODS * this.periodMs);
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (count) => {
        this.busy = false;
        // This instance has just announced itself: it counts at least itself. A drop is believed
        // only once it has lasted an announcement's lifetime: a Redis restarted without its data
        // (or a failover to a replica that had not the ZSET yet) counts the fleet from zero, each
        // instance finding only those that announced since, and a share cut for a fleet of one then
        // would let a fleet of N admit N limits in the next outage. The safe side: smaller shares
        // for one lifetime more, whereas a dead instance leaves the count about 3 periods later.
        const now = performance.now();
        this.recent.push({ count: Math.max(1, Math.floor(count)), at: now });
        const lifetime = ANNOUNCE_TTL_PERIODS * this.periodMs;
        while (this.recent.length > 1 && this.recent[0].at < now - lifetime) this.recent.shift();
        this.instances = Math.max(...this.recent.map((r) => r.count));
        this.learnedAt = Date.now();
        this.learned(this.instances);
      },
      () => {
        this.busy = false;
        this.failures++;
        // The count is kept while the store is away, and counts as learned now: after an outage
        // longer than a lifetime, a Redis back without its data must not be believed at its first
        // answer either (the old count would otherwise be a lifetime old and dropped at once).
        this.recent.splice(0, this.recent.length, { count: this.instances, at: performance.now() });
      },
    );
  }
}

/** A fleet of one that learns nothing: a fixed `instances`, or a store that cannot announce (MemoryStore, a custom store). */
export function fixedFleet(prefix: string, instances: number): FleetView {
  return { instances, learnedAt: undefined, failures: 0, prefix, learning: false };
}
