// A limiter's link to its shared store: every call guarded (breaker, deadline, counts), hot-key mode above it, and a store failure turned into the failure mode's decision.
import type { Decision } from '../model/decision';
import { HotKeyStore, withHotKeys } from '../hot-keys/hot-key-store';
import type { FloodgateMetrics, HotKeyCounts, ScriptCallCounts, StoreMonitor } from '../observe/metrics';
import type { ResolvedLimit } from '../model/limit';
import type { ResolvedLimiterOptions } from './options';
import type { Store, StoreRequest, StoreResult } from '../stores/store';
import { lateAnswer } from '../base/deadline';
import { CallBook, guarded, guardedSync, isOverload, isScriptError } from '../failure/guard';
import { createFallback, localFleet, type Fallback } from '../failure/policy';
import { runtimeFor } from '../failure/store-runtime';
import { configDigest, FleetCount, fixedFleet } from '../failure/fleet-count';
import type { FleetView } from '../observe/states';
import { warnOnce } from '../base/warnings';

/** What the limiter hears from its link besides answers. */
export interface LinkHooks {
  /** The store's answer to a request that had already been given the failure mode's decision (it came after the deadline). */
  late(request: StoreRequest, result: StoreResult): void;
}

export interface StoreLink {
  /** The store's answer for this request; rejects when the store failed or was skipped: then ask `degraded`. */
  evaluate(request: StoreRequest): Promise<StoreResult>;
  /** `evaluate(request).then(answered, failed)`, without the promise in between where it can (no hot-key mode): the guard's reaction calls the continuation. */
  evaluateThen<R>(request: StoreRequest, answered: (result: StoreResult) => R, failed: (error: unknown) => R): Promise<R>;
  /** The same, synchronously, for a store that decides synchronously (and no hot-key mode); else undefined. Throws like `evaluate` rejects. */
  readonly evaluateSync: ((request: StoreRequest) => StoreResult) | undefined;
  /** The failure mode's decision for a request whose call failed with `error`. */
  degraded(request: StoreRequest, error: unknown): Decision;
  /** The store's answer to a request (in time or late): remembered per subject, to cap its local decisions (a store that can fail only). */
  remember(request: StoreRequest, result: StoreResult): void;
  /** Where a lease taken by a local ('fail-local') decision is released and renewed. */
  readonly localLeases: { evaluate(request: StoreRequest): Promise<unknown> };
  /** Forgets these keys in the store (through the same guard; rejects when the store fails) and in the local fallback. */
  reset(keys: readonly string[]): Promise<void>;
  readonly monitor: StoreMonitor;
  readonly hotKeys: { readonly stats: HotKeyCounts } | undefined;
  readonly scriptStats: ScriptCallCounts | undefined;
  /** The instances this limiter's local share is cut for: fixed, learned through the store, recorded, declared (`minInstances`) or not yet known. */
  readonly fleet: FleetView;
  /** What the `floodgate.instances` gauge reads (held here: the meter holds it weakly). */
  readonly fleetGauge: object;
}

const ignore = (): void => undefined;
// The scale of "recently answered" for a store that states no deadline of its own (nor gets one).
const DEFAULT_DEADLINE_MS = 100;

/**
 * Links a limiter to its store's runtime: the breaker belongs to the shared store (not to this
 * limiter), so every route sees one outage; hot-key mode sits above the breaker and the deadline,
 * so every lease draw passes the breaker and is bounded, and the waiters of a failed draw get the
 * failure mode's answer, not draws of their own.
 */
export function linkStore(
  resolved: ResolvedLimiterOptions,
  limits: readonly ResolvedLimit[],
  clock: () => number,
  meter: FloodgateMetrics,
  hooks: LinkHooks,
): StoreLink {
  const { failure, store: shared } = resolved;
  const runtime = runtimeFor(shared);
  const channel = runtime.channel(failure.breaker, clock);
  channel.reporters.add(failure.logger, failure.onStoreError, failure.failMode);
  channel.countOn(meter);
  runtime.warnOnce(failure.logger);
  // The instances sharing the limit: fixed, or learned through the store ('auto', the default).
  const counted: FleetView =
    (failure.instances === undefined ? runtime.connection.fleet(resolved.prefix, shared) : undefined) ?? fixedFleet(resolved.prefix, failure.instances ?? 1);
  // Two apps on one prefix: told once (FG_PREFIX_SHARED), through this limiter's logger if it is the
  // first. A limiter made by traffic (a plan) is no part of the app's configuration.
  if (counted instanceof FleetCount && !resolved.madeForRequest) counted.register(configDigest(limits), (message) => void warnOnce(failure.logger, resolved.warnings, 'FG_PREFIX_SHARED', message));
  // The count this limiter's shares are cut for: the fleet's, raised to minInstances; never 1 by default before any count.
  const fleet = localFleet(counted, failure.minInstances);
  // Held by the link (the meter holds it weakly): the gauge shows it while this limiter lives.
  const fleetGauge = { store: shared.name, fleet };
  meter.fleets.add(fleetGauge);
  const fallback: Fallback = createFallback(limits, failure, channel.breaker, fleet, clock);
  if (shared.scriptStats) meter.scriptCalls.add(shared as { name: string; scriptStats: ScriptCallCounts });

  const book = new CallBook(channel, meter, failure.failMode, failure.timeoutMs ?? shared.timeoutMs ?? DEFAULT_DEADLINE_MS);
  // A store that can fail (asynchronous) tells the fallback which units it has been asked for and not answered yet.
  const guard = guarded(shared, failure.timeoutMs, book, typeof shared.evaluateSync === 'function' && failure.timeoutMs === undefined && !resolved.hotKeys ? undefined : (request, units) => fallback.pending(request, units));
  const store: Store = withHotKeys(guard, resolved.hotKeys);
  const hotKeys = store instanceof HotKeyStore ? store : undefined;
  if (hotKeys) meter.hotKeys.add(hotKeys);

  // A store that decides synchronously (MemoryStore, no hot-key mode) is asked without a promise.
  const sync =
    hotKeys === undefined && typeof shared.evaluateSync === 'function' && failure.timeoutMs === undefined
      ? guardedSync(shared as Store & { evaluateSync: NonNullable<Store['evaluateSync']> }, book)
      : undefined;

  return {
    evaluate: (request) => store.evaluate(request),
    evaluateThen: hotKeys === undefined ? guard.evaluateThen : (request, answered, failed) => store.evaluate(request).then(answered, failed),
    evaluateSync: sync,
    degraded(request, error) {
      // A late answer still counts (the limiter caches its denial); a lease draw's is the hot-key store's own.
      const late = hotKeys === undefined ? lateAnswer<StoreResult>(error) : undefined;
      // A call that timed out may still be counted: its own units are among the pending ones (guard.ts) until its late answer.
      const ownPending = late !== undefined && sync === undefined;
      if (late) {
        late.then((result) => {
          try {
            hooks.late(request, result);
          } catch {
            // A late answer is a bonus: nothing it could throw may reach a request.
          }
        }, ignore);
      }
      // Busy is not down: every route keeps a limit, this instance's share, whatever its failMode. Nor
      // is one subject's script error, which a caller may provoke: never an admission without limit.
      return isOverload(error) || isScriptError(error) || failure.failMode === 'local' ? fallback.local(request, ownPending) : fallback.decide(request);
    },
    // A synchronous store (MemoryStore) never decides late nor overloads: nothing to remember.
    remember: sync === undefined ? fallback.remember : ignore,
    localLeases: fallback.leases,
    async reset(keys) {
      fallback.reset(keys);
      await store.reset(keys);
    },
    monitor: channel.monitor,
    hotKeys,
    scriptStats: shared.scriptStats,
    fleet,
    fleetGauge,
  };
}
