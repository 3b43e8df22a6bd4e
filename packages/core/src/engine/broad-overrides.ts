// Broad overrides (a route for every caller, or everything): one hash per store and prefix, polled by each instance, applied as the script's arguments.
import type { Store } from '../stores/store';
import type { ResolvedLimit } from '../model/limit';
import type { LimitSet } from './dynamic-limits';

/** Default `overrides.pollMs`: how often an instance reads the broad overrides (the bound on how late it applies one). */
export const DEFAULT_POLL_MS = 1000;
/** The target of an override for everything a limiter counts (every route, every caller). */
export const ALL_SCOPES = '*';

/** One broad override as stored: the cap per policy, and when it ends (the store's clock, ms). */
export interface BroadEntry {
  readonly limits: Readonly<Record<string, number>>;
  readonly until: number;
  readonly reason?: string;
}

type Broad = { readonly get: (scope: string) => BroadEntry | undefined; version: number };

/**
 * The broad overrides of one store and prefix, read every `pollMs` (timer unref'd; one per store
 * and prefix, whatever the number of limiters on it). A failed read keeps the last one read.
 */
class BroadPoller implements Broad {
  private entries = new Map<string, BroadEntry>();
  version = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly key: string,
    private readonly pollMs: number,
  ) {}

  start(): void {
    if (this.timer) return;
    void this.poll();
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref?.();
  }

  get(scope: string): BroadEntry | undefined {
    return this.entries.size === 0 ? undefined : this.entries.get(scope) ?? this.entries.get(ALL_SCOPES);
  }

  /** Reads the hash now (also right after this instance changed it: it applies at once here). */
  async poll(): Promise<void> {
    if (!this.store.readBroad) return;
    let read: { now: number; fields: Record<string, string> };
    try {
      read = await this.store.readBroad(this.key);
    } catch {
      return;
    }
    const next = new Map<string, BroadEntry>();
    for (const text of Object.values(read.fields)) {
      try {
        const entry = JSON.parse(text) as BroadEntry & { scope: string };
        if (typeof entry.scope === 'string' && entry.until > read.now) next.set(entry.scope, entry);
      } catch {
        // A field no limiter wrote is not an override.
      }
    }
    if (JSON.stringify([...next]) !== JSON.stringify([...this.entries])) this.version++;
    this.entries = next;
  }
}

const pollers = new WeakMap<Store, Map<string, BroadPoller>>();

/** The poller of this store and prefix, started. */
export function broadFor(store: Store, prefix: string, pollMs: number): BroadPoller {
  let byPrefix = pollers.get(store);
  if (!byPrefix) pollers.set(store, (byPrefix = new Map()));
  let poller = byPrefix.get(prefix);
  if (!poller) byPrefix.set(prefix, (poller = new BroadPoller(store, `${prefix}:broad`, pollMs)));
  poller.start();
  return poller;
}

/** The limit set under a broad override: each named policy's capacity replaced (capped at the ceiling), a rate scaled with it. */
export function broadSet(set: LimitSet, entry: BroadEntry, ceiling: number | undefined): LimitSet {
  const limits = set.limits.map((l): ResolvedLimit => {
    let cap = entry.limits[l.name];
    if (cap === undefined || l.algorithm === 'concurrency') return l;
    if (ceiling !== undefined) cap = Math.min(cap, ceiling);
    const store = 'refillPerSecond' in l.store ? { ...l.store, capacity: cap, refillPerSecond: cap === 0 ? l.store.refillPerSecond : (l.store.refillPerSecond * cap) / l.limit } : { ...l.store, capacity: cap };
    return { ...l, limit: cap, store };
  });
  const rate = limits.filter((l) => l.algorithm !== 'concurrency').map((l) => l.limit);
  return { limits, storeLimits: limits.map((l) => l.store), maxCost: Math.min(set.maxCost, ...rate), sameKeys: set.sameKeys };
}
