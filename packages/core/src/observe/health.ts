// The health snapshot: per store its breaker state, last error and counts, for an app's health route.
import type { BreakerState, FleetSource, FleetView, SheddingStats } from './states';
import { invalidOption } from '../base/errors';
import { checkOptionNames, optionNames, optionsObject } from '../base/validate';
import { storeErrorKind, type HotKeyCounts, type KeyLookupCounts, type Outcome, type ScriptCallCounts, type StoreErrorKind, type StoreMonitor } from './metrics';

/**
 * What `health(options)` shows. The default snapshot is safe for a public `/healthz`: each store's
 * state, breaker and error kinds, never the store's own words.
 */
export interface HealthOptions {
  /**
   * Also show the store's raw error message (`lastError.message`) and its configuration warnings'
   * text (`warnings`): Redis's own words, which can carry script line numbers and hashes, addresses
   * and configuration. For a private endpoint (an admin port, an authenticated route) only.
   * Default false.
   */
  detail?: boolean;
}

const HEALTH_OPTION_NAMES = optionNames<HealthOptions>()(['detail']);

/** Parses `health(options)`: whether to show the store's raw words. */
export function healthDetail(options: HealthOptions | undefined): boolean {
  const o = optionsObject('health options', options, 'an options object { detail? }');
  checkOptionNames('health options', o, HEALTH_OPTION_NAMES);
  if (o.detail !== undefined && typeof o.detail !== 'boolean') invalidOption('health options.detail', o.detail, 'true or false');
  return o.detail === true;
}

/** A store's state in one word: 'down' while its breaker is open, 'degraded' while it is failing or probed, else 'ok'. */
export type StoreStatus = 'ok' | 'degraded' | 'down';

/** One shared store as the limiters see it. */
export interface StoreHealth {
  /** The store's name ('redis', 'memory', ...). */
  readonly store: string;
  /** 'down': the breaker is open (the failure mode answers); 'degraded': half-open, or the last call failed; 'ok' otherwise. */
  readonly status: StoreStatus;
  /** 'closed': calls go to the store; 'open': it is skipped and the failure mode answers; 'half-open': one call probes it. */
  readonly breaker: BreakerState;
  /** Failed calls in a row (0 after any success). */
  readonly consecutiveFailures: number;
  /** ms until the breaker lets a probe through; 0 when closed. */
  readonly retryInMs: number;
  /** Store calls made (lease draws included), and those that failed, by kind. */
  readonly calls: number;
  readonly errors: Readonly<Record<StoreErrorKind, number>>;
  /**
   * The last failure: its kind (a stable category) and wall-clock time (ISO 8601), and with
   * `{ detail: true }` the store's own message; null if none.
   */
  readonly lastError: { readonly kind: StoreErrorKind; readonly at: string; readonly message?: string } | null;
  /** Wall-clock time of the last answer from the store (ISO 8601); null if none yet. */
  readonly lastSuccessAt: string | null;
  /** Answers that came after their deadline: the store was slow, not gone (docs/failure-modes.md#slow-is-not-down). */
  readonly lateAnswers: number;
  /** Timeouts while the store was still answering: not counted against the breaker. */
  readonly slowTimeouts: number;
  /** Requests decided locally because the store had `maxInFlight` calls in flight. */
  readonly shed: number;
  /** Requests decided locally because the script failed on their own subject (FG_STORE_SCRIPT): not store failures. */
  readonly scriptErrors: number;
  /** Script calls and the requests they carried (coalescing), for stores that count them. */
  readonly scriptCalls?: Readonly<ScriptCallCounts>;
  /** How many configuration warnings the store has (RedisStore: the client's, and an evicting maxmemory-policy); absent when none. */
  readonly warningCount?: number;
  /** Their text, with `{ detail: true }` only (it names the server's configuration); absent when none. */
  readonly warnings?: readonly string[];
}

/** The instances one limiter prefix's local shares are cut for (docs/failure-modes.md#instances). */
export interface FleetHealth {
  readonly prefix: string;
  /**
   * The count local shares are cut for: live instances last counted, this one included (or the
   * fixed `instances`), raised to `minInstances`; null before any count with no `minInstances`
   * (source 'unlearned': a share of 1 unit per subject).
   */
  readonly instances: number | null;
  /** Where that count comes from: 'fixed', 'learned', 'recorded', 'declared' or 'unlearned' (FleetView.source). */
  readonly source: FleetSource;
  /** True when learned through the store (`instances: 'auto'`, the default, on RedisStore). */
  readonly learned: boolean;
  /** Wall-clock time of the last count (ISO 8601); null before the first, or when fixed. */
  readonly learnedAt: string | null;
  /** Announcements that failed; the last count is kept meanwhile. */
  readonly failures: number;
}

/** What `health()` returns: enough for a health route to answer 200 or 503, and for a person to see why. */
export interface Health {
  /** False when any store's breaker is not closed: requests are getting the failure mode's answer. */
  readonly healthy: boolean;
  readonly stores: readonly StoreHealth[];
  /** Decisions made so far, by outcome. */
  readonly decisions: Readonly<Record<Outcome, number>>;
  /** Requests answered from the block cache. */
  readonly blockCacheHits: number;
  /** Per limiter prefix, the instances its local shares are cut for (learned or fixed); absent for stores that cannot announce with no fixed count. */
  readonly fleets?: readonly FleetHealth[];
  /** Hot-key mode's counts, summed over the limiters that use it; absent when none does. */
  readonly hotKeys?: Readonly<HotKeyCounts>;
  /** Worker utilisation shedding (option `shedding`): its level, last sample and requests shed by class; absent when off. */
  readonly shedding?: Readonly<SheddingStats>;
  /** API-key cache and resolveKey lookups (HTTP limiters with `resolveKey`); absent otherwise. */
  readonly keyLookups?: Readonly<KeyLookupCounts>;
}

/** What each limiter hands to the snapshot. */
export interface HealthSource {
  readonly monitor: StoreMonitor;
  readonly tally: { totals(): Record<Outcome, number> };
  readonly blockCache: { readonly hits: number } | undefined;
  readonly hotKeys: { readonly stats: HotKeyCounts } | undefined;
  readonly scriptStats: ScriptCallCounts | undefined;
  /** The instances this limiter's local shares are cut for. */
  readonly fleet?: FleetView;
  /** The store's warnings, read when a snapshot is taken (a store may find one after construction). */
  readonly warnings?: readonly string[];
}

/** Records one failed store call on its monitor; returns its kind. */
export function recordFailure(monitor: StoreMonitor, error: unknown): StoreErrorKind {
  const kind = storeErrorKind(error);
  monitor.errors[kind]++;
  monitor.lastError = { kind, message: error instanceof Error ? error.message : String(error), at: Date.now() };
  return kind;
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

function statusOf(m: StoreMonitor): StoreStatus {
  if (m.breaker.state === 'open') return 'down';
  return m.breaker.state === 'half-open' || m.breaker.consecutiveFailures > 0 ? 'degraded' : 'ok';
}

/** One store's entry; its raw words (error message, warnings' text) only with `detail`. */
function storeHealthOf(m: StoreMonitor, s: HealthSource, detail: boolean): StoreHealth {
  const last = m.lastError;
  const warnings = s.warnings?.length ? s.warnings : undefined;
  return {
    store: m.store,
    status: statusOf(m),
    breaker: m.breaker.state,
    consecutiveFailures: m.breaker.consecutiveFailures,
    retryInMs: m.breaker.msUntilProbe(),
    calls: m.calls,
    errors: { ...m.errors },
    lastError: last ? { kind: last.kind, at: iso(last.at)!, ...(detail ? { message: last.message } : {}) } : null,
    lastSuccessAt: iso(m.lastSuccessAt),
    lateAnswers: m.lateAnswers,
    slowTimeouts: m.slowTimeouts,
    shed: m.shed,
    scriptErrors: m.scriptErrors,
    ...(s.scriptStats ? { scriptCalls: { ...s.scriptStats } } : {}),
    ...(warnings ? { warningCount: warnings.length } : {}),
    ...(warnings && detail ? { warnings: [...warnings] } : {}),
  };
}

/**
 * The snapshot of these limiters: stores listed once each, counts summed. The stores' raw words
 * (error messages, warnings' text) only with `{ detail: true }`.
 */
export function healthOf(sources: Iterable<HealthSource>, keyLookups?: Iterable<KeyLookupCounts>, options?: HealthOptions): Health {
  const detail = healthDetail(options);
  const stores = new Map<StoreMonitor, StoreHealth>();
  const decisions = { allowed: 0, denied: 0, degraded: 0 };
  let blockCacheHits = 0;
  let hotKeys: HotKeyCounts | undefined;
  const seenCaches = new Set<object>();
  const seenHot = new Set<object>();
  const fleets = new Map<string, FleetHealth>();
  for (const s of sources) {
    const f = s.fleet;
    if (f && (f.learning || f.instances > 1) && !fleets.has(`${f.learning}\0${f.prefix}`)) {
      const instances = Number.isFinite(f.instances) ? f.instances : null;
      fleets.set(`${f.learning}\0${f.prefix}`, { prefix: f.prefix, instances, source: f.source, learned: f.learning, learnedAt: iso(f.learnedAt), failures: f.failures });
    }
    const m = s.monitor;
    if (!stores.has(m)) stores.set(m, storeHealthOf(m, s, detail));
    const t = s.tally.totals();
    decisions.allowed += t.allowed;
    decisions.denied += t.denied;
    decisions.degraded += t.degraded;
    if (s.blockCache && !seenCaches.has(s.blockCache)) {
      seenCaches.add(s.blockCache);
      blockCacheHits += s.blockCache.hits;
    }
    if (s.hotKeys && !seenHot.has(s.hotKeys)) {
      seenHot.add(s.hotKeys);
      hotKeys ??= { local: 0, leases: 0, deniedLeases: 0, localDenials: 0, passThrough: 0 };
      for (const k of Object.keys(hotKeys) as (keyof HotKeyCounts)[]) hotKeys[k] += s.hotKeys.stats[k];
    }
  }
  let lookups: KeyLookupCounts | undefined;
  for (const k of keyLookups ?? []) {
    lookups ??= { hits: 0, misses: 0, lookups: 0, failures: 0 };
    lookups.hits += k.hits;
    lookups.misses += k.misses;
    lookups.lookups += k.lookups;
    lookups.failures += k.failures;
  }
  const list = [...stores.values()];
  return {
    healthy: list.every((s) => s.breaker === 'closed'),
    stores: list,
    decisions,
    blockCacheHits,
    ...(fleets.size ? { fleets: [...fleets.values()] } : {}),
    ...(hotKeys ? { hotKeys } : {}),
    ...(lookups ? { keyLookups: lookups } : {}),
  };
}
