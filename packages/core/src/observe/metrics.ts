// Floodgate's OpenTelemetry instruments, defined once: names, units, bounded attributes, and the live counts they read.
import { createNoopMeter, metrics, type Attributes, type Counter, type Histogram, type MeterProvider, type ObservableResult } from '@opentelemetry/api';
import type { BreakerState } from './states';
import type { DecisionReason } from '../model/decision';

/** The meter's name: what an exporter shows as the instrumentation scope. */
export const METER_NAME = '@floodgate/core';

/**
 * Attribute names. Every value is bounded by configuration (stores, scopes, policies) or by a fixed
 * list (outcome, reason, error type, state): never a caller's key, IP or subject.
 */
export const ATTR = {
  store: 'floodgate.store',
  scope: 'floodgate.scope',
  policy: 'floodgate.policy',
  outcome: 'floodgate.outcome',
  reason: 'floodgate.reason',
  state: 'floodgate.breaker.state',
  errorType: 'error.type',
  priority: 'floodgate.priority',
  shedBy: 'floodgate.shed.by',
  /** Where the floodgate.instances count comes from (FleetView.source). */
  fleetSource: 'floodgate.instances.source',
} as const;

/**
 * Why a store call failed, as `error.type`: 'noperm' (the Redis user's ACL refuses a command or a
 * key), 'oom' (Redis at maxmemory refuses writes), 'readonly' (the connection reached a replica,
 * e.g. a master demoted by a failover) each name their own fix; see docs/production-redis.md.
 */
export type StoreErrorKind = 'timeout' | 'connection' | 'script_missing' | 'noperm' | 'oom' | 'readonly' | 'other';
export const STORE_ERROR_KINDS: readonly StoreErrorKind[] = ['timeout', 'connection', 'script_missing', 'noperm', 'oom', 'readonly', 'other'];

// ioredis gives up on a command whose connection dropped `maxRetriesPerRequest` times with "Reached the max retries per request limit".
const CONNECTION = /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|socket|connection|closed|not connected|offline|max retries per request/i;
const BY_CODE: Readonly<Record<string, StoreErrorKind>> = {
  FG_STORE_TIMEOUT: 'timeout',
  FG_STORE_UNAVAILABLE: 'connection',
  FG_STORE_NOPERM: 'noperm',
  FG_STORE_OOM: 'oom',
  FG_STORE_READONLY: 'readonly',
};

/**
 * The Redis refusals by the server's own words, wherever a client puts them in its message
 * (ioredis and node-redis: first; Valkey GLIDE after its own preamble). A command a script runs and
 * the ACL denies is an `ERR` naming "the user executing the script".
 */
export const REDIS_REFUSALS: readonly (readonly [Exclude<StoreErrorKind, 'timeout' | 'connection' | 'other'>, RegExp])[] = [
  ['script_missing', /(^|[\s:-])NOSCRIPT\b|NoScriptError/],
  ['noperm', /(^|[\s:-])NOPERM\b|user executing the script can't|no permissions to/],
  ['oom', /(^|[\s:-])OOM command not allowed/],
  ['readonly', /(^|[\s:-])READONLY\b|can't write against a read only replica/],
];

/** Sorts a store failure into one of its kinds, by Floodgate's error codes and the server's own error words. */
export function storeErrorKind(error: unknown): StoreErrorKind {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && BY_CODE[code]) return BY_CODE[code];
  const message = error instanceof Error ? error.message : String(error);
  for (const [kind, words] of REDIS_REFUSALS) if (words.test(message)) return kind;
  if ((typeof code === 'string' && code.startsWith('E')) || CONNECTION.test(message)) return 'connection';
  return 'other';
}

/** A decision's outcome: degraded when the shared store did not decide, else allowed or denied. */
export type Outcome = 'allowed' | 'denied' | 'degraded';

interface Cell {
  count: number;
  readonly attributes: Attributes;
  readonly outcome: Outcome;
}

/** Scopes counted per limiter; past it, further scopes are counted as '<other>' so series stay bounded. */
export const MAX_SCOPES = 1000;
export const OTHER_SCOPE = '<other>';

/**
 * One limiter's decisions, counted by scope, reason and policy. Each cell (and its attribute
 * object) is built the first time it is seen; after that a decision is three Map reads and an
 * increment, with no allocation.
 */
export class DecisionTally {
  private readonly scopes = new Map<string, Map<DecisionReason, Map<string | null, Cell>>>();
  /** The cell the last decision was counted in, and what found it (cells are never removed). */
  private lastScope = '';
  private lastReason: DecisionReason | undefined;
  private lastPolicy: string | null = null;
  private lastCell: Cell | undefined;
  constructor(readonly store: string) {}

  count(scope: string, reason: DecisionReason, policy: string | null, degraded: boolean, allowed: boolean): void {
    // Most decisions repeat the last one's cell (one route, admitted): counted without three Map reads.
    if (this.lastCell !== undefined && this.lastScope === scope && this.lastReason === reason && this.lastPolicy === policy) {
      this.lastCell.count++;
      return;
    }
    let reasons = this.scopes.get(scope);
    if (reasons === undefined) {
      // Past MAX_SCOPES every new scope counts as OTHER_SCOPE, which itself always gets its place.
      if (this.scopes.size >= MAX_SCOPES && scope !== OTHER_SCOPE) return this.count(OTHER_SCOPE, reason, policy, degraded, allowed);
      this.scopes.set(scope, (reasons = new Map()));
    }
    let policies = reasons.get(reason);
    if (policies === undefined) reasons.set(reason, (policies = new Map()));
    let cell = policies.get(policy);
    if (cell === undefined) {
      const outcome: Outcome = degraded ? 'degraded' : allowed ? 'allowed' : 'denied';
      const attributes: Attributes = { [ATTR.store]: this.store, [ATTR.scope]: scope, [ATTR.outcome]: outcome, [ATTR.reason]: reason };
      if (policy !== null) attributes[ATTR.policy] = policy;
      policies.set(policy, (cell = { count: 0, attributes, outcome }));
    }
    cell.count++;
    this.lastScope = scope;
    this.lastReason = reason;
    this.lastPolicy = policy;
    this.lastCell = cell;
  }

  *cells(): Iterable<Cell> {
    for (const reasons of this.scopes.values()) for (const policies of reasons.values()) yield* policies.values();
  }

  /** Decisions so far by outcome. */
  totals(): Record<Outcome, number> {
    const totals = { allowed: 0, denied: 0, degraded: 0 };
    for (const cell of this.cells()) totals[cell.outcome] += cell.count;
    return totals;
  }
}

/** What one shared store has been through, as its limiters saw it (behind its circuit breaker). */
export interface StoreMonitor {
  readonly store: string;
  readonly breaker: { readonly state: BreakerState; readonly consecutiveFailures: number; msUntilProbe(): number };
  calls: number;
  readonly errors: Record<StoreErrorKind, number>;
  lastError: { kind: StoreErrorKind; message: string; at: number } | undefined;
  lastSuccessAt: number | undefined;
  /** Answers that came after their call's deadline (the store was slow, not gone). */
  lateAnswers: number;
  /** Timeouts while the connection was still answering: slow, so not counted against the breaker. */
  slowTimeouts: number;
  /** Requests decided locally because the store had `maxInFlight` calls in flight (not store failures). */
  shed: number;
  /** Requests decided locally because the script failed on their own subject (FG_STORE_SCRIPT; not store failures). */
  scriptErrors: number;
}

// Counts kept as plain numbers by their owners, read only when a metric reader collects.
/** What hot-key mode did (HotKeyStore.stats): counters that only grow. */
export interface HotKeyCounts {
  /** Requests answered from a lease, with no store call. */
  local: number;
  /** Leases drawn (store calls of cost leaseSize that were admitted). */
  leases: number;
  /** Lease draws the store denied (the rest is held by other instances, or the limit is reached). */
  deniedLeases: number;
  /** Requests denied from the last denied lease, with no store call, until a whole lease fits again. */
  localDenials: number;
  /** Requests sent to the store unchanged (cold subject, peek, or a cost of a whole lease or more). */
  passThrough: number;
}
export interface KeyLookupCounts {
  hits: number;
  misses: number;
  lookups: number;
  failures: number;
}
export interface ScriptCallCounts {
  calls: number;
  requests: number;
}

/** Objects held weakly (a limiter may be dropped) and each once, in the order added. */
class WeakList<T extends object> {
  private readonly refs = new Set<WeakRef<T>>();
  private readonly seen = new WeakSet<T>();
  add(value: T): void {
    if (this.seen.has(value)) return;
    this.seen.add(value);
    this.refs.add(new WeakRef(value));
  }
  *[Symbol.iterator](): Iterator<T> {
    for (const ref of this.refs) {
      const value = ref.deref();
      if (value === undefined) this.refs.delete(ref);
      else yield value;
    }
  }
}

/** Sums observations that share attributes before reporting them: an observable reports one value per attribute set. */
class Sums {
  private readonly sums = new Map<string, { attributes: Attributes; value: number }>();
  add(attributes: Attributes, value: number): void {
    const key = JSON.stringify(attributes);
    const sum = this.sums.get(key);
    if (sum) sum.value += value;
    else this.sums.set(key, { attributes, value });
  }
  report(result: ObservableResult): void {
    for (const { attributes, value } of this.sums.values()) result.observe(value, attributes);
  }
}

const BREAKER_STATES: readonly BreakerState[] = ['closed', 'half-open', 'open'];
/** Store call durations in seconds: a healthy Redis answers in under a millisecond, a timeout is 100 ms by default. */
const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];

/** The API's no-op histogram (one instance, returned by every no-op meter of this copy of the API). */
const NOOP_HISTOGRAM = createNoopMeter().createHistogram('floodgate.noop');

/** Floodgate's instruments on one meter provider, and the live counts its observable instruments read. */
export class FloodgateMetrics {
  readonly tallies = new WeakList<DecisionTally>();
  readonly stores = new WeakList<StoreMonitor>();
  readonly hotKeys = new WeakList<{ readonly name: string; readonly stats: HotKeyCounts }>();
  readonly blockCaches = new WeakList<{ readonly store: string; readonly hits: number }>();
  readonly keyLookups = new WeakList<KeyLookupCounts>();
  readonly scriptCalls = new WeakList<{ readonly name: string; readonly scriptStats: ScriptCallCounts }>();
  /** The instances each limiter's local shares are cut for (failure/fleet-count.ts), by store. */
  readonly fleets = new WeakList<{ readonly store: string; readonly fleet: { readonly instances: number; readonly source: string } }>();
  /** Load shedders (`shedding`: by 'worker'; `fleet`: by 'fleet') and what each has shed, by class. */
  readonly shedders = new WeakList<{ readonly by: 'worker' | 'fleet'; readonly shedCounts: { readonly background: number; readonly default: number; readonly critical?: number } }>();
  /** Store call durations, by store and (for failures) error.type. */
  readonly storeDuration: Histogram;
  /** False when no SDK is registered (the API's no-op histogram): store calls are then not timed at all. */
  readonly timed: boolean;
  /** Failed store calls, by store and error.type. */
  readonly storeErrors: Counter;
  /** Circuit breaker state changes, by store and the state entered. */
  readonly breakerTransitions: Counter;
  /** Overrides set and cleared (limiter.override, clearOverride), by store and action ('set' | 'clear'). */
  readonly overrides: Counter;

  constructor(provider: MeterProvider) {
    const meter = provider.getMeter(METER_NAME);
    this.storeDuration = meter.createHistogram('floodgate.store.duration', {
      description: 'Duration of store calls (one atomic script call, or a hot-key lease draw), failures included.',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    this.timed = this.storeDuration !== NOOP_HISTOGRAM;
    this.storeErrors = meter.createCounter('floodgate.store.errors', { description: 'Store calls that failed, by error.type.', unit: '{error}' });
    this.breakerTransitions = meter.createCounter('floodgate.breaker.transitions', {
      description: 'Circuit breaker state changes, by the state entered.',
      unit: '{transition}',
    });
    this.overrides = meter.createCounter('floodgate.overrides', { description: 'Overrides set and cleared at runtime, by action.', unit: '{override}' });

    meter
      .createObservableCounter('floodgate.decisions', {
        description: 'Rate-limit decisions, by outcome (allowed, denied, degraded) and reason.',
        unit: '{decision}',
      })
      .addCallback((result) => {
        const sums = new Sums();
        for (const tally of this.tallies) for (const cell of tally.cells()) sums.add(cell.attributes, cell.count);
        sums.report(result);
      });

    meter
      .createObservableGauge('floodgate.breaker.state', {
        description: 'Circuit breakers of this store in this state (1 for a single breaker in it, else 0).',
        unit: '{breaker}',
      })
      .addCallback((result) => {
        const sums = new Sums();
        for (const m of this.stores) {
          for (const state of BREAKER_STATES) sums.add({ [ATTR.store]: m.store, [ATTR.state]: state }, m.breaker.state === state ? 1 : 0);
        }
        sums.report(result);
      });

    meter
      .createObservableGauge('floodgate.instances', {
        description:
          "Instances sharing a limit, as this instance's local shares are cut for: the most among this store's limiter prefixes, per source (floodgate.instances.source: fixed, learned, recorded, declared, or unlearned: no count yet, observed as 0, a share of 1 unit per subject).",
        unit: '{instance}',
      })
      .addCallback((result) => {
        const most = new Map<string, { store: string; source: string; n: number }>();
        for (const f of this.fleets) {
          const key = `${f.store}\0${f.fleet.source}`;
          const n = Number.isFinite(f.fleet.instances) ? f.fleet.instances : 0;
          most.set(key, { store: f.store, source: f.fleet.source, n: Math.max(most.get(key)?.n ?? 0, n) });
        }
        for (const { store, source, n } of most.values()) result.observe(n, { [ATTR.store]: store, [ATTR.fleetSource]: source });
      });

    const counter = (name: string, description: string, unit: string, read: (sums: Sums) => void) =>
      meter.createObservableCounter(name, { description, unit }).addCallback((result) => {
        const sums = new Sums();
        read(sums);
        sums.report(result);
      });
    counter('floodgate.hot_keys.local_decisions', 'Hot-key mode: requests decided from a lease or a denied lease, with no store call.', '{decision}', (sums) => {
      for (const h of this.hotKeys) {
        sums.add({ [ATTR.store]: h.name, [ATTR.outcome]: 'allowed' }, h.stats.local);
        sums.add({ [ATTR.store]: h.name, [ATTR.outcome]: 'denied' }, h.stats.localDenials);
      }
    });
    counter('floodgate.hot_keys.leases', 'Hot-key mode: lease draws, by outcome (drawn, denied).', '{lease}', (sums) => {
      for (const h of this.hotKeys) {
        sums.add({ [ATTR.store]: h.name, [ATTR.outcome]: 'drawn' }, h.stats.leases);
        sums.add({ [ATTR.store]: h.name, [ATTR.outcome]: 'denied' }, h.stats.deniedLeases);
      }
    });
    counter('floodgate.block_cache.hits', 'Requests answered from the block cache (a denied caller, no store call).', '{hit}', (sums) => {
      for (const b of this.blockCaches) sums.add({ [ATTR.store]: b.store }, b.hits);
    });
    counter('floodgate.key_lookup.cache', 'API-key cache reads, by outcome (hit, miss).', '{read}', (sums) => {
      for (const k of this.keyLookups) {
        sums.add({ [ATTR.outcome]: 'hit' }, k.hits);
        sums.add({ [ATTR.outcome]: 'miss' }, k.misses);
      }
    });
    counter('floodgate.key_lookup.calls', 'resolveKey lookups started (concurrent requests for one key share one).', '{lookup}', (sums) => {
      for (const k of this.keyLookups) sums.add({}, k.lookups);
    });
    counter('floodgate.key_lookup.failures', 'Requests whose resolveKey lookup threw, answered badly, timed out or found no free slot (keyCache.maxInFlight).', '{request}', (sums) => {
      for (const k of this.keyLookups) sums.add({}, k.failures);
    });
    counter('floodgate.shed', 'Requests shed (503), by priority class and by what shed them (worker: this instance\'s event loop; fleet: the fleet\'s in-flight budget).', '{request}', (sums) => {
      for (const s of this.shedders) {
        for (const [priority, n] of Object.entries(s.shedCounts)) sums.add({ [ATTR.priority]: priority, [ATTR.shedBy]: s.by }, n);
      }
    });
    counter('floodgate.store.script_calls', 'Script calls sent to the store (coalescing: requests / calls is the batch size).', '{call}', (sums) => {
      for (const s of this.scriptCalls) sums.add({ [ATTR.store]: s.name }, s.scriptStats.calls);
    });
    counter('floodgate.store.script_requests', 'Requests carried by those script calls.', '{request}', (sums) => {
      for (const s of this.scriptCalls) sums.add({ [ATTR.store]: s.name }, s.scriptStats.requests);
    });
  }
}

const byProvider = new WeakMap<MeterProvider, FloodgateMetrics>();

/**
 * Floodgate's instruments on this provider (default: the global one at the time of the call), made
 * once per provider. Register the SDK before building limiters, or pass `meterProvider`: with no
 * SDK every instrument is OpenTelemetry's no-op.
 */
export function metricsFor(provider: MeterProvider = metrics.getMeterProvider()): FloodgateMetrics {
  let found = byProvider.get(provider);
  if (!found) byProvider.set(provider, (found = new FloodgateMetrics(provider)));
  return found;
}
