// The lease book: the leases one limiter holds for requests still running (renewal every leaseMs / 3, release, the maxHoldMs cap).
import type { Lease } from '../model/concurrency';
import type { StoreLimit } from '../algorithms/registry';
import type { StoreRequest } from '../stores/store';

/** Where a lease was taken: the shared store, or the failure mode's local memory. */
export interface LeaseSite {
  evaluate(request: StoreRequest): Promise<unknown>;
}

interface Held {
  readonly request: StoreRequest;
  readonly site: LeaseSite;
  readonly heldSince: number;
  renewedAt: number;
  capped: boolean;
}

/**
 * The leases one limiter holds for requests still running: each is renewed every leaseMs / 3 by
 * one timer for all of them (unref'd: it never keeps the process alive), which runs only while a
 * lease is renewed. A lease's release and renewals go to where it was taken. No lease is renewed
 * past `maxHoldMs` after it was taken: a renewal that would carry it past that is not sent, the
 * lease leaves the book (its release still goes to the store when the request ends), and the store
 * frees it when its last renewal runs out. So a hung request holds its slots for at most maxHoldMs.
 */
export class LeaseBook {
  private readonly held = new Set<Held>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly everyMs: number;
  private cappedCount = 0;

  constructor(
    private readonly leaseLimits: readonly StoreLimit[],
    private readonly leaseMs: number,
    private readonly clock: () => number,
    private readonly maxHoldMs: number = Infinity,
    /** Told each time a lease reaches maxHoldMs and is left to expire (the limiter warns once: FG_LEASE_MAX_HOLD). */
    private readonly onCapped: () => void = () => undefined,
  ) {
    this.everyMs = Math.max(250, Math.floor(leaseMs / 3));
  }

  /** Holds the slots `cost` leased under `token` on these keys (one per lease limit) at `site`. */
  hold(keys: readonly string[], cost: number, token: string, site: LeaseSite): Lease {
    const now = this.clock();
    const entry: Held = { request: { keys, limits: this.leaseLimits, cost, mode: 'renew', token }, site, heldSince: now, renewedAt: now, capped: false };
    this.held.add(entry);
    if (this.timer === undefined) {
      this.timer = setInterval(() => this.renewDue(), this.everyMs);
      (this.timer as { unref?: () => void }).unref?.();
    }
    let released = false;
    return {
      token,
      get capped() {
        return entry.capped;
      },
      release: () => {
        if (released) return Promise.resolve(false);
        released = true;
        this.forget(entry);
        return site.evaluate({ ...entry.request, mode: 'release' }).then(
          () => true,
          () => false,
        );
      },
    };
  }

  /** Leases held and renewed now (a capped one is no longer counted). */
  get size(): number {
    return this.held.size;
  }

  /** Leases that reached `maxHoldMs` and were left to expire, since this book was made. */
  get capped(): number {
    return this.cappedCount;
  }

  private forget(entry: Held): void {
    this.held.delete(entry);
    if (this.held.size === 0) this.stop();
  }

  private renewDue(): void {
    const now = this.clock();
    for (const entry of this.held) {
      if (now - entry.renewedAt < this.everyMs) continue;
      // A renewal runs the lease leaseMs from now: not past maxHoldMs after it was taken.
      if (now - entry.heldSince + this.leaseMs > this.maxHoldMs) {
        entry.capped = true;
        this.cappedCount++;
        this.forget(entry);
        this.onCapped();
        continue;
      }
      entry.renewedAt = now;
      // A failed renewal leaves the lease to expire on its own: the next renewal tries again.
      entry.site.evaluate(entry.request).catch(() => undefined);
    }
  }

  private stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
