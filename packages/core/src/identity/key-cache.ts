// The resolveKey cache: found and unknown keys kept apart (a flood of invented keys never evicts a real one), one lookup in flight per key, lookups in flight bounded and abandoned at their deadline, lookups bounded per IP.
import { LRUCache } from 'lru-cache';
import { periodOf } from '../algorithms/registry';
import type { ResolvedLimit } from '../model/limit';
import { resolveLimits, type LimitOptions } from '../engine/options';

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

/** What a lookup is handed beside the key. */
export interface ResolveKeyContext {
  /** Aborted when Floodgate stops waiting (`resolveTimeoutMs`): cancel the query with it. */
  readonly signal: AbortSignal;
}

/** `resolveKey(apiKey, { signal })`: a found key's account (and plan), or null/undefined for a key you never issued. */
export type ResolveKey = (apiKey: string, context: ResolveKeyContext) => ResolvedKey | null | undefined | Promise<ResolvedKey | null | undefined>;

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
  | { readonly ok: false; readonly why: 'error' | 'timeout' | 'saturated'; readonly error?: unknown };

export interface KeyCacheOptions {
  resolveKey: ResolveKey;
  /** Found keys remembered. */
  max: number;
  /** Unknown keys remembered (a separate cache: unknown keys never push found ones out). */
  unknownMax: number;
  ttlMs: number;
  unknownTtlMs: number;
  /** A lookup's deadline: past it the lookup is abandoned (its slot freed, its signal aborted). */
  timeoutMs: number;
  /** Lookups in flight at once, over all keys; past it a request is answered without one (see `full`). */
  maxInFlight: number;
  /** Lookups (and answers of unknown keys from the cache), per client IP per `lookupWindowMs`. */
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
const TIMED_OUT: LookupOutcome = Object.freeze({ ok: false, why: 'timeout' });
/** Client IPs whose lookup budget is tracked at once; an IP dropped past it starts a fresh budget. */
const MAX_TRACKED_IPS = 100_000;

export class KeyCache {
  private readonly found: LRUCache<string, KeyRecord>;
  private readonly unknown: LRUCache<string, KeyRecord>;
  /** Lookups in flight, by key digest: each entry settles by its deadline, so this holds at most `maxInFlight`. */
  private readonly inFlight = new Map<string, Promise<LookupOutcome>>();
  /** Per client IP: lookups (and unknown-key answers) in the current window, and when it started. */
  private readonly budgets: LRUCache<string, { used: number; since: number }>;
  /**
   * Reads answered within TTL (hits) or not (misses); resolveKey calls started; requests whose
   * lookup threw, answered badly, timed out or found no free slot; lookups in flight now (at most
   * `maxInFlight`).
   */
  readonly stats = { hits: 0, misses: 0, lookups: 0, failures: 0, inFlight: 0 };

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
   * Spends one of this client IP's lookups; false when its budget for the window is spent (a key
   * never seen, or answered unknown, is then treated as unknown without a lookup).
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

  /** True while a lookup of this key is in flight (a request for it joins that lookup). */
  pending(digest: string): boolean {
    return this.inFlight.has(digest);
  }

  /** True when `maxInFlight` lookups are in flight: a new one must not start. */
  full(): boolean {
    return this.inFlight.size >= this.options.maxInFlight;
  }

  /**
   * Looks the key up through `resolveKey`. Concurrent calls for one key share one lookup. Never
   * rejects: a throw, a rejection, a bad result or a timeout is an outcome. At `timeoutMs` the
   * lookup is abandoned: every request waiting for it goes on without it, its slot is freed and its
   * signal aborted (a resolveKey that never settles holds no slot, and no request, past its
   * deadline); an answer that still comes is cached.
   */
  lookup(digest: string, apiKey: string): Promise<LookupOutcome> {
    return (this.inFlight.get(digest) ?? this.start(digest, apiKey)).then((outcome) => {
      if (!outcome.ok) this.stats.failures++;
      return outcome;
    });
  }

  /** A request answered without a lookup because `maxInFlight` were in flight: counted as a failure. */
  refused(): void {
    this.stats.failures++;
  }

  private start(digest: string, apiKey: string): Promise<LookupOutcome> {
    this.stats.lookups++;
    const controller = new AbortController();
    const loaded = this.load(apiKey, controller.signal).then(
      (record): LookupOutcome => {
        this.remember(digest, record);
        return { ok: true, record };
      },
      (error: unknown): LookupOutcome => ({ ok: false, why: 'error', error }),
    );
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<LookupOutcome>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), this.options.timeoutMs);
      timer.unref?.();
    });
    const outcome: Promise<LookupOutcome> = Promise.race([loaded, deadline]).then((result) => {
      clearTimeout(timer);
      if (this.inFlight.get(digest) === outcome) this.inFlight.delete(digest);
      this.stats.inFlight = this.inFlight.size;
      if (result === TIMED_OUT) controller.abort();
      return result;
    });
    this.inFlight.set(digest, outcome);
    this.stats.inFlight = this.inFlight.size;
    return outcome;
  }

  private remember(digest: string, record: KeyRecord): void {
    if (record.known) {
      this.found.set(digest, record);
      this.unknown.delete(digest);
    } else {
      this.unknown.set(digest, record);
      this.found.delete(digest);
    }
  }

  /** Keys remembered, found and unknown. */
  get size(): number {
    return this.found.size + this.unknown.size;
  }

  private async load(apiKey: string, signal: AbortSignal): Promise<KeyRecord> {
    const value: unknown = await this.options.resolveKey(apiKey, { signal });
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
