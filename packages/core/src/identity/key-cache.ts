// The resolveKey cache: found and unknown keys kept apart (a flood of invented keys never evicts a real one), one lookup in flight per key, lookups of unseen keys bounded per IP.
import { LRUCache } from 'lru-cache';
import { periodOf } from '../algorithms/registry';
import type { ResolvedLimit } from '../limit';
import { resolveLimits, type LimitOptions } from '../options';

/** What `resolveKey` returns for a key it knows. */
export interface ResolvedKey {
  /** Whatever names the caller in your app (an account id, a row); handed back on the Identity. */
  account: unknown;
  /**
   * This key's plan: limits enforced instead of the route's own (same shape as createLimiter's
   * `limits`). Omit to use the route's limits.
   */
  limits?: LimitOptions[];
}

/** `resolveKey(apiKey)`: a found key's account (and plan), or null/undefined for a key you never issued. */
export type ResolveKey = (apiKey: string) => ResolvedKey | null | undefined | Promise<ResolvedKey | null | undefined>;

/** One cached answer. */
export type KeyRecord =
  | {
      readonly known: true;
      readonly account: unknown;
      /** The plan as resolveKey gave it (a frozen copy), and parsed; both set or neither. */
      readonly limits?: readonly LimitOptions[];
      readonly resolvedLimits?: readonly ResolvedLimit[];
      readonly plan?: string;
    }
  | { readonly known: false };

export type LookupOutcome =
  | { readonly ok: true; readonly record: KeyRecord }
  | { readonly ok: false; readonly why: 'error' | 'timeout'; readonly error?: unknown };

export interface KeyCacheOptions {
  resolveKey: ResolveKey;
  /** Found keys remembered. */
  max: number;
  /** Unknown keys remembered (a separate cache: unknown keys never push found ones out). */
  unknownMax: number;
  ttlMs: number;
  unknownTtlMs: number;
  timeoutMs: number;
  /** Lookups of keys this cache has never seen, per client IP per `lookupWindowMs`. */
  lookupsPerIp: number;
  lookupWindowMs: number;
  clock: () => number;
  /** A found key whose `limits` are invalid: it is cached as known with the route's limits. */
  onBadPlan(error: unknown): void;
}

class BadResult extends Error {
  constructor(value: unknown) {
    super(`resolveKey must return { account, limits? }, null or undefined; got ${value === null ? 'null' : typeof value}`);
    this.name = 'BadResult';
  }
}

const UNKNOWN: KeyRecord = { known: false };
/** Client IPs whose lookup budget is tracked at once; an IP dropped past it starts a fresh budget. */
const MAX_TRACKED_IPS = 100_000;

export class KeyCache {
  private readonly found: LRUCache<string, KeyRecord>;
  private readonly unknown: LRUCache<string, KeyRecord>;
  private readonly inFlight = new Map<string, Promise<KeyRecord>>();
  /** Per client IP: lookups of unseen keys in the current window, and when it started. */
  private readonly budgets: LRUCache<string, { used: number; since: number }>;
  /** Reads answered within TTL (hits) or not (misses); resolveKey calls started; requests whose lookup threw, answered badly or timed out. */
  readonly stats = { hits: 0, misses: 0, lookups: 0, failures: 0 };

  constructor(private readonly options: KeyCacheOptions) {
    const common = {
      perf: { now: options.clock },
      // Read the clock on every check: the default caches it for 1 ms behind a timer.
      ttlResolution: 0,
      // An expired record still predicts who the caller is while its block lasts (see `last`), and
      // a failed refresh keeps it, so a lookup outage serves the last answer.
      noDeleteOnStaleGet: true,
    };
    this.found = new LRUCache<string, KeyRecord>({ ...common, max: options.max, ttl: options.ttlMs });
    this.unknown = new LRUCache<string, KeyRecord>({ ...common, max: options.unknownMax, ttl: options.unknownTtlMs });
    this.budgets = new LRUCache({ max: MAX_TRACKED_IPS });
  }

  /** A record still within its TTL, with no lookup; undefined when a lookup is needed. */
  fresh(digest: string): KeyRecord | undefined {
    const record = this.found.get(digest) ?? this.unknown.get(digest);
    if (record === undefined) this.stats.misses++;
    else this.stats.hits++;
    return record;
  }

  /** The last record seen for this key, even past its TTL (never triggers a lookup). */
  last(digest: string): KeyRecord | undefined {
    return this.found.peek(digest, { allowStale: true }) ?? this.unknown.peek(digest, { allowStale: true });
  }

  /**
   * Spends one of this client IP's lookups of unseen keys; false when its budget for the window is
   * spent (the key is then treated as unknown without a lookup). Keys seen before do not spend.
   */
  spendLookup(ip: string): boolean {
    const now = this.options.clock();
    let budget = this.budgets.get(ip);
    if (!budget || now - budget.since >= this.options.lookupWindowMs) {
      budget = { used: 0, since: now };
      this.budgets.set(ip, budget);
    }
    if (budget.used >= this.options.lookupsPerIp) return false;
    budget.used++;
    return true;
  }

  /** True while a lookup of this key is in flight (a request for it then spends no lookup budget). */
  pending(digest: string): boolean {
    return this.inFlight.has(digest);
  }

  /**
   * Looks the key up through `resolveKey`. Concurrent calls for one key share one lookup. Never
   * rejects: a throw, a rejection, a bad result or a timeout is an outcome. A timed-out lookup
   * keeps running and its answer is cached when it arrives.
   */
  lookup(digest: string, apiKey: string): Promise<LookupOutcome> {
    let pending = this.inFlight.get(digest);
    if (!pending) {
      this.stats.lookups++;
      pending = this.load(apiKey).then((record) => {
        if (record.known) {
          this.found.set(digest, record);
          this.unknown.delete(digest);
        } else {
          this.unknown.set(digest, record);
          this.found.delete(digest);
        }
        return record;
      });
      const forget = () => this.inFlight.delete(digest);
      pending.then(forget, forget);
      this.inFlight.set(digest, pending);
    }
    const settled = pending.then(
      (record): LookupOutcome => ({ ok: true, record }),
      (error: unknown): LookupOutcome => ({ ok: false, why: 'error', error }),
    );
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<LookupOutcome>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, why: 'timeout' }), this.options.timeoutMs);
      timer.unref?.();
    });
    return Promise.race([settled, timeout]).then((outcome) => {
      clearTimeout(timer);
      if (!outcome.ok) this.stats.failures++;
      return outcome;
    });
  }

  /** Keys remembered, found and unknown. */
  get size(): number {
    return this.found.size + this.unknown.size;
  }

  private async load(apiKey: string): Promise<KeyRecord> {
    const value: unknown = await this.options.resolveKey(apiKey);
    if (value === null || value === undefined || value === false) return UNKNOWN;
    if (typeof value !== 'object') throw new BadResult(value);
    const { account, limits } = value as ResolvedKey;
    if (limits === undefined) return { known: true, account };
    try {
      const resolved = resolveLimits(limits, 'resolveKey(...).limits');
      // Equal plans get equal names, whatever object or property order resolveKey built them with.
      const plan = JSON.stringify(resolved.map((l) => [l.name, l.store.algorithm, l.store.capacity, periodOf(l.store)]));
      return { known: true, account, limits: Object.freeze([...limits]), resolvedLimits: Object.freeze(resolved), plan };
    } catch (error) {
      this.options.onBadPlan(error);
      return { known: true, account };
    }
  }
}
