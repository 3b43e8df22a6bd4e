// In-flight limits: the `concurrency` option, and the leases a limiter holds (release, renewal) for the requests it admitted.
import type { StoreLimit } from './algorithms/registry';
import { parseDuration, type Duration } from './duration';
import { invalidOption } from './errors';
import type { ResolvedLimit } from './limit';
import type { StoreRequest } from './stores/store';
import { checkOptionNames, MAX_UNITS, optionNames, wholeNumber } from './validate';

/** How many of one subject's requests may be in flight at once (docs/concurrency.md). */
export interface ConcurrencyOptions {
  /** Requests (slots: a request takes `cost` of them) in flight at once per subject. A whole number from 1. Required. */
  limit: number;
  /**
   * How long a lease lasts without renewal: a lease whose holder crashed or hung frees its slots
   * this long after its last renewal. The limiter renews the leases of requests still running
   * every leaseMs / 3. From 1 s to 1 h. Default 30_000 ms.
   */
  leaseMs?: Duration;
  /**
   * The longest the limiter renews one lease for: a request still running this long after it was
   * admitted (a hung handler, a response that never ends) stops being renewed, and its slots free
   * themselves within maxHoldMs of its admission (the last renewal never takes the lease past it),
   * even though the request may still run: the slot is then counted free early, never held forever.
   * Set it above your longest legitimate request (a long export, a stream). From leaseMs to 24 h.
   * Default 600_000 ms (10 minutes).
   */
  maxHoldMs?: Duration;
  /** Policy name in headers and the key. `[A-Za-z0-9_.-]{1,64}`. Default 'concurrency'. */
  name?: string;
}

const CONCURRENCY_OPTION_NAMES = optionNames<ConcurrencyOptions>()(['limit', 'leaseMs', 'maxHoldMs', 'name']);

/** The default `maxHoldMs`: 10 minutes, past most requests, short of "forever". */
export const DEFAULT_MAX_HOLD_MS = 600_000;
const MAX_HOLD_CEILING_MS = 86_400_000;

/** The in-flight limit as a limit of the lease kind, plus how long its leases may be renewed. */
export interface ResolvedConcurrency extends ResolvedLimit {
  /** `maxHoldMs`: no lease is renewed past this long after its admission. */
  readonly maxHoldMs: number;
}

/** The `concurrency` option as a limit of the lease kind, decided with the request's rate limits in one store call. */
export function resolveConcurrency(raw: ConcurrencyOptions | undefined, option = 'concurrency'): ResolvedConcurrency | undefined {
  if (raw === undefined) return undefined;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) invalidOption(option, raw, 'an object such as { limit: 10 }');
  checkOptionNames(option, raw, CONCURRENCY_OPTION_NAMES);
  const limit = wholeNumber(`${option}.limit`, raw.limit, 1, MAX_UNITS);
  const leaseMs = parseDuration(`${option}.leaseMs`, raw.leaseMs ?? 30_000, 1_000, 3_600_000);
  // Below one lease it would mean nothing (an unrenewed lease already lasts leaseMs): the range starts at leaseMs.
  const maxHoldMs = parseDuration(`${option}.maxHoldMs`, raw.maxHoldMs ?? Math.max(DEFAULT_MAX_HOLD_MS, leaseMs), leaseMs, MAX_HOLD_CEILING_MS);
  const name = raw.name ?? 'concurrency';
  if (typeof name !== 'string' || !/^[A-Za-z0-9_.-]{1,64}$/.test(name)) invalidOption(`${option}.name`, name, 'a string matching [A-Za-z0-9_.-]{1,64}');
  return { name, algorithm: 'concurrency', limit, windowMs: leaseMs, store: { algorithm: 'concurrency', capacity: limit, leaseMs }, keySuffix: `${name}.cc`, maxHoldMs };
}

/** A lease id: unique per request (122 random bits), a letter first (the stores' token rule). Web Crypto: core also runs in the browser (the playground). */
export function newLeaseToken(): string {
  return `L${globalThis.crypto.randomUUID().replace(/-/g, '')}`;
}

/** The slots one admitted request holds until it finishes. */
export interface Lease {
  /** The lease's id in the store. */
  readonly token: string;
  /**
   * Gives the slots back (once: later calls resolve false at once). Resolves true when the store
   * applied it, false when it failed (the lease then expires after `leaseMs`). Never rejects.
   */
  release(): Promise<boolean>;
  /** True once the lease has been held `maxHoldMs` and is no longer renewed (it expires on its own). */
  readonly capped: boolean;
}

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

/** Whether a store limit holds leases (release and renew go to these only). */
export const isLease = (l: StoreLimit): boolean => l.algorithm === 'concurrency';

