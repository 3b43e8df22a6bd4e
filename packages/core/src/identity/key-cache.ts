// The resolveKey cache: bounded, a TTL for found keys and a shorter one for unknown keys, one lookup in flight per key.
import { LRUCache } from 'lru-cache';
import { resolveLimiterOptions, type LimitOptions } from '../options';
import type { Store } from '../stores/store';

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
  | { readonly known: true; readonly account: unknown; readonly limits?: readonly LimitOptions[]; readonly plan?: string }
  | { readonly known: false };

export type LookupOutcome =
  | { readonly ok: true; readonly record: KeyRecord }
  | { readonly ok: false; readonly why: 'error' | 'timeout'; readonly error?: unknown };

export interface KeyCacheOptions {
  resolveKey: ResolveKey;
  max: number;
  ttlMs: number;
  unknownTtlMs: number;
  timeoutMs: number;
  clock: () => number;
  /** A found key whose `limits` are invalid: it is cached as known with the route's limits. */
  onBadPlan(error: unknown): void;
}

// Plans are validated with the limiter's own parser, which needs a store; this one is never called.
const VALIDATION_ONLY_STORE: Store = {
  name: 'plan-validation',
  evaluate: () => Promise.reject(new Error('never called')),
  reset: () => Promise.resolve(),
};

class BadResult extends Error {
  constructor(value: unknown) {
    super(`resolveKey must return { account, limits? }, null or undefined; got ${value === null ? 'null' : typeof value}`);
    this.name = 'BadResult';
  }
}

const UNKNOWN: KeyRecord = { known: false };

export class KeyCache {
  private readonly cache: LRUCache<string, KeyRecord, string>;

  constructor(private readonly options: KeyCacheOptions) {
    this.cache = new LRUCache<string, KeyRecord, string>({
      max: options.max,
      ttl: options.ttlMs,
      perf: { now: options.clock },
      // Read the clock on every check: the default caches it for 1 ms behind a timer.
      ttlResolution: 0,
      // An expired record still predicts who the caller is while its block lasts (see `last`).
      noDeleteOnStaleGet: true,
      // A failed refresh keeps the expired record, so a lookup outage serves the last answer.
      noDeleteOnFetchRejection: true,
      fetchMethod: async (_digest, _stale, { options: setOptions, context }) => {
        const record = await this.load(context);
        setOptions.ttl = record.known ? options.ttlMs : options.unknownTtlMs;
        return record;
      },
    });
  }

  /** A record still within its TTL, with no lookup; undefined when a lookup is needed. */
  fresh(digest: string): KeyRecord | undefined {
    return this.cache.get(digest);
  }

  /** The last record seen for this key, even past its TTL (never triggers a lookup). */
  last(digest: string): KeyRecord | undefined {
    return this.cache.peek(digest, { allowStale: true });
  }

  /**
   * Looks the key up through `resolveKey`. Concurrent calls for one key share one lookup (the cache
   * holds it in flight). Never rejects: a throw, a rejection, a bad result or a timeout is an
   * outcome. A timed-out lookup keeps running and its answer is cached when it arrives.
   */
  lookup(digest: string, apiKey: string): Promise<LookupOutcome> {
    let fetching: Promise<KeyRecord | undefined>;
    try {
      fetching = this.cache.fetch(digest, { context: apiKey });
    } catch (error) {
      return Promise.resolve({ ok: false, why: 'error', error });
    }
    const settled = fetching.then(
      (record): LookupOutcome =>
        record ? { ok: true, record } : { ok: false, why: 'error', error: new Error('lookup aborted') },
      (error: unknown): LookupOutcome => ({ ok: false, why: 'error', error }),
    );
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<LookupOutcome>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, why: 'timeout' }), this.options.timeoutMs);
      timer.unref?.();
    });
    return Promise.race([settled, timeout]).finally(() => clearTimeout(timer));
  }

  get size(): number {
    return this.cache.size;
  }

  private async load(apiKey: string): Promise<KeyRecord> {
    const value: unknown = await this.options.resolveKey(apiKey);
    if (value === null || value === undefined || value === false) return UNKNOWN;
    if (typeof value !== 'object') throw new BadResult(value);
    const { account, limits } = value as ResolvedKey;
    if (limits === undefined) return { known: true, account };
    try {
      const resolved = resolveLimiterOptions({ limits, store: VALIDATION_ONLY_STORE });
      // Equal plans get equal names, whatever object or property order resolveKey built them with.
      const plan = JSON.stringify(resolved.limits.map((l) => [l.name, l.store.algorithm, l.store.capacity, l.store.period]));
      return { known: true, account, limits: Object.freeze([...limits]), plan };
    } catch (error) {
      this.options.onBadPlan(error);
      return { known: true, account };
    }
  }
}
