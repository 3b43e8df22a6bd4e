// createLimiter: the framework-free engine. Cheapest check first: block cache, then one atomic store call.
import { isThenable } from './maybe-promise';
import { BlockCache } from './block-cache';
import { lockedDecision, toDecision, type Decision } from './decision';
import { breakerFor, type Admission, type CircuitBreaker } from './failure/breaker';
import { createFallback, reportTransitions, type FailMode } from './failure/policy';
import { withDeadline } from './deadline';
import { subjectKey } from './keys';
import { NestedMemo } from './memo';
import { resolveLimiterOptions, type CreateLimiterOptions, type ResolvedLimiterOptions } from './options';
import { FloodgateError } from './errors';
import type { Store, StoreLockout, StoreRequest, StoreResult } from './stores/store';
import { HotKeyStore, withHotKeys } from './hot-keys/hot-key-store';
import { LeaseBook, newLeaseToken, type LeaseSite } from './concurrency';
import { isCost, refundAt, requestCost } from './validate';
import { healthOf, monitorFor, recordFailure, type Health, type HealthSource } from './health';
import { ATTR, DecisionTally, metricsFor, STORE_ERROR_KINDS, type FloodgateMetrics, type StoreErrorKind, type StoreMonitor } from './metrics';
import type { Attributes } from '@opentelemetry/api';

export type { CreateLimiterOptions } from './options';

// One clock function for every limiter that does not bring its own, so limiters on one store share one breaker.
const monotonic = () => performance.now();
// Most subjects whose keys one limiter keeps built (a miss only rebuilds them), and the longest
// subject plus scope remembered (longer ones are rare and would hold memory).
const KEYS_MAX = 10_000;
const KEYS_MAX_INPUT = 512;

/** One subject's keys in one scope: the digest-named base, one key per limit, the lock-out's key. */
interface SubjectKeys {
  readonly base: string;
  readonly keys: readonly string[];
  readonly lock: StoreLockout | undefined;
}
// Stores whose configuration warnings were already logged, and those whose later warnings a logger hears.
const warned = new WeakSet<object>();
const warnedLater = new WeakSet<object>();

export interface ConsumeOptions {
  /** Units this request draws; a whole number from 0. Default 1. */
  cost?: number;
  /** The bucket's scope, e.g. the route pattern; separate scopes are separate buckets. Default ''. */
  scope?: string;
}

export interface RefundOptions extends ConsumeOptions {
  /** The `at` of the admitted decision being refunded (`Decision.at`): the store-clock ms it was charged at. Required. */
  at: number;
}

export interface Limiter {
  /** Draws `cost` units for this subject, all-or-nothing over every limit. Resolves; never rejects for a limit. */
  consume(subject: string, options?: ConsumeOptions): Promise<Decision>;
  /**
   * Gives back the `cost` units (default 1) that the consume decided at `at` (its `Decision.at`)
   * drew, to every limit, as if it had not happened: never below zero, never past a full limit;
   * a charge whose window has passed is no longer counted and is not given back. Use it to count
   * only some outcomes (charge first, refund the ones that should not count: exact under concurrency).
   * Resolves true when the store applied it, false when the store failed or its circuit breaker
   * skipped it (the units stay charged); never rejects for a store failure. Rejects with
   * FG_INVALID_COST or FG_INVALID_AT for a bad `cost` or `at`.
   */
  refund(subject: string, options: RefundOptions): Promise<boolean>;
  /** What a request of `cost` (default 1) would get now, without drawing anything. */
  peek(subject: string, options?: ConsumeOptions): Promise<Decision>;
  /** Forgets this subject's counts in this scope (and its local ones, for failMode 'local'). Rejects if the store fails. */
  reset(subject: string, options?: Pick<ConsumeOptions, 'scope'>): Promise<void>;
  /**
   * What `consume` would answer from the block cache alone: the 'blocked' decision when this subject
   * is denied this cost until a time not yet reached, else undefined. Synchronous, no store call:
   * lets a caller skip costlier work (an API-key lookup) for a caller it will deny anyway.
   */
  blocked(subject: string, options?: ConsumeOptions): Decision | undefined;
  /**
   * A snapshot for a health route: the store's circuit breaker state, its last error and when, and
   * counts (decisions by outcome, store calls and errors, block-cache and hot-key figures).
   * `healthy` is false while the breaker is not closed. See docs/operations.md.
   */
  health(): Health;
  readonly options: ResolvedLimiterOptions;
}

/** What Floodgate's own layers see of a limiter: its health source, and a block-cache probe that counts no decision. */
export interface EngineLimiter extends Limiter {
  readonly healthSource: HealthSource;
  /**
   * `consume`, answered synchronously when nothing had to wait (a store that decides synchronously,
   * such as MemoryStore, or the block cache): the HTTP layer then serves the request in the same
   * turn, without a promise. Throws (synchronously) FG_INVALID_COST for a bad cost.
   */
  consumeNow(subject: string, options?: ConsumeOptions): Decision | Promise<Decision>;
  /** Whether `blocked` would answer, without counting a decision (the identity layer's look-ahead). */
  isBlocked(subject: string, options: { cost: number; scope: string }): boolean;
}

export function createLimiter(options: CreateLimiterOptions = {}): Limiter {
  return limiterFrom(resolveLimiterOptions(options));
}

/** Builds a limiter from options already parsed (the HTTP layer parses once and builds many). */
export function limiterFrom(resolved: ResolvedLimiterOptions): EngineLimiter {
  const { prefix, blockCacheSize, lockout, concurrency } = resolved;
  // The in-flight limit is the last limit: decided with the rate limits in one atomic store call.
  const limits = concurrency ? [...resolved.limits, concurrency] : resolved.limits;
  const maxCost = concurrency ? Math.min(resolved.maxCost, concurrency.limit) : resolved.maxCost;
  const storeLimits = limits.map((l) => l.store);
  const clock = resolved.clock ?? monotonic;
  const blocks = blockCacheSize > 0 ? new BlockCache<Decision>(blockCacheSize, clock) : undefined;

  // Failure policy: every store call is bounded, passes the store's circuit breaker, and a failure
  // or a skipped call becomes the failure mode's degraded decision, never a rejection. The breaker
  // belongs to the shared store (not a per-limiter wrapper), so every route sees one outage.
  const { failure } = resolved;
  const shared = resolved.store;
  const breaker = breakerFor(shared, failure.breaker, clock);
  reportTransitions(breaker, shared.name, failure.logger, failure.onStoreError, failure.failMode);
  const fallback = createFallback(limits, failure, breaker);
  // Metrics: counts live here as plain numbers, read by observable instruments when a reader collects.
  const meter = metricsFor(resolved.meterProvider);
  const monitor = monitorFor(breaker, shared.name);
  meter.stores.add(monitor);
  countTransitions(breaker, meter, shared.name);
  const tally = new DecisionTally(shared.name);
  meter.tallies.add(tally);
  const blockStats = blocks && { store: shared.name, get hits() { return blocks.hits; } };
  if (blockStats) meter.blockCaches.add(blockStats);
  if (shared.scriptStats) meter.scriptCalls.add(shared as { name: string; scriptStats: { calls: number; requests: number } });
  // Hot-key mode sits above the breaker and the deadline: every lease draw passes the breaker and is
  // bounded, and the waiters of a failed draw get the failure mode's answer, not draws of their own.
  const book = callBookkeeping(shared.name, breaker, failure.failMode, monitor, meter);
  const store = withHotKeys(guarded(shared, failure.timeoutMs, book), resolved.hotKeys);
  const hotKeys = store instanceof HotKeyStore ? store : undefined;
  if (hotKeys) meter.hotKeys.add(hotKeys);
  const leases = concurrency && new LeaseBook([concurrency.store], concurrency.windowMs, clock);
  const leaseIndex = limits.length - 1;
  const healthSource: HealthSource = { monitor, tally, blockCache: blockStats, hotKeys, scriptStats: shared.scriptStats, warnings: shared.warnings };
  if (shared.warnings?.length && !warned.has(shared)) {
    warned.add(shared);
    for (const warning of shared.warnings) failure.logger.warn(`[floodgate] ${warning}`, { store: shared.name });
  }
  if (shared.onWarning && !warnedLater.has(shared)) {
    warnedLater.add(shared);
    shared.onWarning((warning) => failure.logger.warn(`[floodgate] ${warning}`, { store: shared.name }));
  }

  // A store that decides synchronously (MemoryStore, no hot-key mode) is asked without a promise.
  const syncStore = hotKeys === undefined && typeof shared.evaluateSync === 'function' && failure.timeoutMs === undefined
    ? guardedSync(shared as Store & { evaluateSync: NonNullable<Store['evaluateSync']> }, book)
    : undefined;

  /** The store's answer as a Decision: `at` only on a charged consume. */
  function fromResult(request: StoreRequest, result: StoreResult): Decision {
    const charged = request.mode === 'consume' && result.allowed && !result.lockedMs;
    const decision = toDecision(limits, result.allowed, result.results, request.cost, undefined, false, charged ? result.at : undefined);
    return result.lockedMs ? lockedDecision(decision, result.lockedMs) : decision;
  }

  /** A synchronous store's decision for a request (the failure mode's when the store fails). */
  function decideNow(request: StoreRequest, sync: NonNullable<typeof syncStore>): Decision {
    let result: StoreResult;
    try {
      result = sync(request);
    } catch {
      return fallback.decide(request);
    }
    return fromResult(request, result);
  }

  // Each subject's keys, built once while it stays active (bounded), found by the strings the request already has.
  const keysMemo = new NestedMemo<SubjectKeys>(KEYS_MAX);
  function keysOf(subject: string, scope: string): SubjectKeys {
    const hit = keysMemo.get(scope, subject);
    if (hit !== undefined) return hit;
    const base = subjectKey(prefix, scope, String(subject));
    // The lock key shares the subject's {hash tag}: one script call reads and writes it with the limits.
    const entry: SubjectKeys = { base, keys: limits.map((l) => `${base}:${l.keySuffix}`), lock: lockout && { ...lockout, key: `${base}:lock` } };
    if (typeof subject === 'string' && subject.length + scope.length <= KEYS_MAX_INPUT) keysMemo.set(scope, subject, entry);
    return entry;
  }

  /** The denial that set the block, aged to now: its reset and retry times count down, not freeze. */
  function fromBlock(base: string, cost: number): Decision | undefined {
    const hit = blocks?.get(base, cost);
    if (!hit) return undefined;
    const d = hit.decision;
    const elapsed = Math.max(0, d.retryAfterMs - hit.leftMs);
    const age = (ms: number) => (ms > 0 ? Math.max(0, Math.ceil(ms - elapsed)) : ms);
    return {
      ...d,
      // A lock-out stays named as one: its wait is the lock's, not the limits'.
      reason: d.reason === 'locked' ? 'locked' : 'blocked',
      retryAfterMs: Math.ceil(hit.leftMs),
      resetMs: d.resetMs === null ? null : age(d.resetMs),
      limits: d.limits.map((l) => ({ ...l, resetMs: age(l.resetMs), retryAfterMs: age(l.retryAfterMs) })),
    };
  }

  /** Counts one decision a consume answered (peeks are not decisions). */
  function counted(decision: Decision, scope: string): Decision {
    tally.count(scope, decision.reason, decision.policy, decision.degraded, decision.allowed);
    return decision;
  }

  /** Synchronous when nothing has to wait; throws FG_INVALID_COST for a bad cost. */
  function decide(subject: string, opts: ConsumeOptions, mode: StoreRequest['mode']): Decision | Promise<Decision> {
    const cost = opts.cost === undefined ? 1 : requestCost(opts.cost, 'got');
    const scope = opts.scope ?? '';
    const { base, keys, lock } = keysOf(subject, scope);
    const consume = mode === 'consume';
    // A cost above the smallest limit can never be admitted: look, never draw (reason cost-exceeds-limit).
    if (cost > maxCost) mode = 'peek';
    if (mode === 'consume') {
      const hit = fromBlock(base, cost);
      if (hit) return counted(hit, scope);
    }
    let request: StoreRequest = lock ? { keys, limits: storeLimits, cost, mode, lockout: lock } : { keys, limits: storeLimits, cost, mode };
    const drew = mode === 'consume';
    // An acquire names its lease, so that it can be released (and renewed) later.
    if (leases && drew) return leased({ ...request, token: newLeaseToken() }, base, cost, scope);
    if (syncStore) return settled(decideNow(request, syncStore), base, cost, scope, consume, drew);
    // One then for the store's answer (or the failure mode's) and what follows: one promise hop per decision.
    return store.evaluate(request).then(
      (result) => settled(fromResult(request, result), base, cost, scope, consume, drew),
      () => settled(fallback.decide(request), base, cost, scope, consume, drew),
    );
  }

  /** A consume with an in-flight limit: an admitted decision carries its lease, held where it was decided. */
  function leased(request: StoreRequest, base: string, cost: number, scope: string): Decision | Promise<Decision> {
    const book = leases!;
    const withLease = (decision: Decision, site: LeaseSite | undefined): Decision => {
      decision = settled(decision, base, cost, scope, true, true);
      if (!decision.allowed || !site) return decision;
      return { ...decision, lease: book.hold([request.keys[leaseIndex]], cost, request.token!, site) };
    };
    const local = fallback.leases;
    if (syncStore) {
      try {
        return withLease(fromResult(request, syncStore(request)), store);
      } catch {
        const decision = fallback.decide(request);
        return withLease(decision, decision.reason === 'fail-local' ? local : undefined);
      }
    }
    return store.evaluate(request).then(
      (result) => withLease(fromResult(request, result), store),
      () => {
        const decision = fallback.decide(request);
        return withLease(decision, decision.reason === 'fail-local' ? local : undefined);
      },
    );
  }

  /** Counts a consume's decision and caches the shared store's denials. */
  function settled(decision: Decision, base: string, cost: number, scope: string, consume: boolean, drew: boolean): Decision {
    if (consume) counted(decision, scope);
    // Only the shared store's denials are cached: a degraded one would outlive the outage.
    // Nor a denial by the in-flight limit: a slot frees when a request ends, not at a known time.
    if (blocks && drew && !decision.allowed && !decision.degraded && decision.retryAfterMs > 0 && (!leases || decision.limits[leaseIndex]?.allowed !== false)) {
      blocks.set(base, cost, decision.retryAfterMs, decision);
    }
    return decision;
  }

  /** decide() as a promise: a synchronous answer resolved, a synchronous throw rejected. */
  function promised(subject: string, opts: ConsumeOptions, mode: StoreRequest['mode']): Promise<Decision> {
    try {
      const decision = decide(subject, opts, mode);
      return isThenable(decision) ? decision : Promise.resolve(decision);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  return {
    options: resolved,
    consume: (subject, opts = {}) => promised(subject, opts, 'consume'),
    consumeNow: (subject, opts = {}) => decide(subject, opts, 'consume'),
    peek: (subject, opts = {}) => promised(subject, opts, 'peek'),
    blocked(subject, opts = {}) {
      const cost = opts.cost ?? 1;
      // Mirrors decide(): a bad cost or one above every limit never reads the block cache.
      if (!blocks || !isCost(cost) || cost > maxCost) return undefined;
      const scope = opts.scope ?? '';
      const hit = fromBlock(subjectKey(prefix, scope, String(subject)), cost);
      return hit && counted(hit, scope);
    },
    isBlocked(subject, { cost, scope }) {
      if (!blocks || !isCost(cost) || cost > maxCost) return false;
      return blocks.get(subjectKey(prefix, scope, String(subject)), cost) !== undefined;
    },
    healthSource,
    health: () => healthOf([healthSource]),
    async refund(subject, opts = {} as RefundOptions) {
      const cost = opts.cost === undefined ? 1 : requestCost(opts.cost, 'got');
      const at = refundAt(opts.at);
      const { base, keys } = keysOf(subject, opts.scope ?? '');
      // Room may have come back: the next consume asks the store.
      blocks?.delete(base);
      // Through the breaker and the deadline like every call; a failure keeps the unit charged (the safe side).
      try {
        await store.evaluate({ keys, limits: storeLimits, cost, mode: 'refund', at });
      } catch {
        return false;
      }
      return true;
    },
    async reset(subject, opts = {}) {
      const { base, keys, lock } = keysOf(subject, opts.scope ?? '');
      blocks?.delete(base);
      fallback.reset(keys);
      await store.reset(lock ? [...keys, lock.key] : keys);
    },
  };
}

/** Thrown, never logged, for a call the open breaker skips: the failure mode answers it. */
const SKIPPED = new FloodgateError('FG_STORE_UNAVAILABLE', 'Store skipped: circuit breaker open.');

/**
 * What every call to the shared store goes through, whether it answers through a promise or at
 * once: the breaker's admission, the call count, the duration (only with an SDK), the outcome for
 * the breaker and the health snapshot. Attribute objects are built once per store, never per call.
 */
function callBookkeeping(name: string, breaker: CircuitBreaker, failMode: FailMode, monitor: StoreMonitor, meter: FloodgateMetrics) {
  const ok: Attributes = { [ATTR.store]: name };
  const failed = {} as Record<StoreErrorKind, Attributes>;
  for (const kind of STORE_ERROR_KINDS) failed[kind] = { [ATTR.store]: name, [ATTR.errorType]: kind };
  return {
    /** The breaker's admission for a call about to be made; throws SKIPPED when it skips the call. */
    begin(): { admission: Admission; started: number } {
      const admission = breaker.admit();
      if (admission === 'skip') throw SKIPPED;
      monitor.calls++;
      return { admission, started: meter.timed ? performance.now() : 0 };
    },
    succeeded(started: number): void {
      if (meter.timed) meter.storeDuration.record((performance.now() - started) / 1000, ok);
      monitor.lastSuccessAt = Date.now();
      breaker.success();
    },
    failed(error: unknown, { admission, started }: { admission: Admission; started: number }): void {
      const kind = recordFailure(monitor, error);
      if (meter.timed) meter.storeDuration.record((performance.now() - started) / 1000, failed[kind]);
      meter.storeErrors.add(1, failed[kind]);
      breaker.failure(error, admission === 'probe', failMode);
    },
  };
}
type CallBookkeeping = ReturnType<typeof callBookkeeping>;

/**
 * The shared store behind its breaker and deadline: a call the breaker skips rejects at once, every
 * other is bounded by `timeoutMs` (when the store does not bound its own calls) and counted by the breaker.
 */
function guarded(shared: Store, timeoutMs: number | undefined, book: CallBookkeeping): Store {
  const call =
    timeoutMs === undefined
      ? (request: StoreRequest) => shared.evaluate(request)
      : (request: StoreRequest) => withDeadline(shared.evaluate(request), timeoutMs, `Store "${shared.name}"`);
  return {
    name: shared.name,
    timeoutMs: timeoutMs ?? shared.timeoutMs,
    // Not an async function: one promise (the store's) and its then, no more.
    evaluate(request: StoreRequest): Promise<StoreResult> {
      let begun: ReturnType<CallBookkeeping['begin']>;
      let pending: Promise<StoreResult>;
      try {
        begun = book.begin();
      } catch (skipped) {
        return Promise.reject(skipped);
      }
      try {
        pending = call(request);
      } catch (error) {
        pending = Promise.reject(error);
      }
      return pending.then(
        (result) => {
          book.succeeded(begun.started);
          return result;
        },
        (error: unknown) => {
          book.failed(error, begun);
          throw error;
        },
      );
    },
    reset: (keys) => shared.reset(keys),
  };
}

/**
 * A store that decides synchronously (MemoryStore) behind the same bookkeeping as `guarded`'s
 * calls: a call the breaker skips throws at once; a throw is a store failure.
 */
function guardedSync(shared: Store & { evaluateSync: NonNullable<Store['evaluateSync']> }, book: CallBookkeeping): (request: StoreRequest) => StoreResult {
  return (request) => {
    const begun = book.begin();
    let result;
    try {
      result = shared.evaluateSync(request);
    } catch (error) {
      book.failed(error, begun);
      throw error;
    }
    book.succeeded(begun.started);
    return result;
  };
}

const transitionsCounted = new WeakMap<CircuitBreaker, WeakSet<FloodgateMetrics>>();

/** Counts this breaker's state changes on this meter, once however many limiters share them. */
function countTransitions(breaker: CircuitBreaker, meter: FloodgateMetrics, store: string): void {
  let counted = transitionsCounted.get(breaker);
  if (!counted) transitionsCounted.set(breaker, (counted = new WeakSet()));
  if (counted.has(meter)) return;
  counted.add(meter);
  const byState = {
    closed: { [ATTR.store]: store, [ATTR.state]: 'closed' },
    open: { [ATTR.store]: store, [ATTR.state]: 'open' },
    'half-open': { [ATTR.store]: store, [ATTR.state]: 'half-open' },
  };
  breaker.subscribe((t) => meter.breakerTransitions.add(1, byState[t.to]));
}
