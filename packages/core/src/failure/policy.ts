// Failure policy: what a request gets when the store cannot decide (open, closed, local), and how it is reported.
import type { StoreLimit } from '../algorithms/registry';
import { bareDecision, toDecision, type Decision } from '../model/decision';
import { parseDuration, type Duration } from '../base/duration';
import { invalidOption } from '../base/errors';
import type { ResolvedLimit } from '../model/limit';
import type { Logger } from '../base/logger';
import { loggerOption, MAX_INSTANCES, optionNames, wholeNumber } from '../base/validate';
import { MemoryStore } from '../stores/memory-store';
import type { Store, StoreRequest, StoreResult } from '../stores/store';
import type { BreakerState, FleetSource, FleetView } from '../observe/states';
import { resolveBreakerOptions, type BreakerOptions, type CircuitBreaker, type ResolvedBreakerOptions } from './breaker';
import { SubjectMemory } from './subject-memory';

export const FAIL_MODES = ['open', 'closed', 'local'] as const;

/** What a limiter that names no failMode gets (docs/failure-modes.md#the-default). */
export const DEFAULT_FAIL_MODE = 'local';

/**
 * What a request gets when the store fails, times out, or is skipped by the open circuit breaker.
 * - `open`: served without limiting (reason 'fail-open').
 * - `closed`: refused, 503 with Retry-After (reason 'fail-closed').
 * - `local`: limited from this instance's memory with its share of the limit, `limit / instances`
 *   (reason 'fail-local').
 */
export type FailMode = (typeof FAIL_MODES)[number];

export type { Logger } from '../base/logger';

/** Passed to `onStoreError` once per change of the circuit breaker's state, never once per request. */
export interface StoreErrorEvent {
  /** 'open': the store failed repeatedly and is skipped; 'half-open': one request probes it; 'closed': it answered again. */
  readonly state: BreakerState;
  readonly previous: BreakerState;
  /** The store's name ('redis', 'memory', ...). */
  readonly store: string;
  /** The failure that opened the breaker (state 'open'); undefined otherwise. */
  readonly error?: unknown;
  /** Consecutive failures counted when the state changed. */
  readonly failures: number;
  /** ms until the next probe (state 'open'); 0 otherwise. */
  readonly retryInMs: number;
}

export interface FailureOptions {
  /**
   * What a request gets when the store cannot decide: 'local' (limit from memory with this
   * instance's share, `floor(limit / instances)`), 'closed' (503 + Retry-After) or 'open' (serve,
   * unlimited). Set it per route: auth routes fail closed; 'open' is for routes that would rather
   * serve everyone than limit anyone while the store is away. Default 'local': neither an outage
   * nor a flood that overloads the store turns the limit off, and the service stays up
   * (docs/failure-modes.md#the-default).
   */
  failMode?: FailMode;
  /**
   * How many instances (processes) share the limit: each one, when it decides alone (failMode
   * 'local', or any mode while the store is overloaded), admits `floor(limit / instances)`, at
   * least 1, so that together they stay near the shared limit.
   * - 'auto' (default): learned through the store. Each process announces itself on RedisStore
   *   every `announceMs` (5 s) under a key that expires, and counts the live ones; the last count
   *   is kept while the store is away. Until the first count: the last count this process
   *   recorded for the prefix, else `minInstances`, else none, and then each subject's local share
   *   is 1 unit per limit (a fleet that starts during an outage must not give each instance the
   *   whole limit). MemoryStore and custom stores learn nothing: 1.
   * - a whole number from 1: fixed, nothing announced (docs/failure-modes.md#instances).
   */
  instances?: number | 'auto';
  /**
   * With `instances: 'auto'`: the fewest instances this app ever runs (say, the autoscaler's
   * minimum). A local share is never cut for fewer, learned count or not, and an instance that has
   * not counted its fleet yet cuts its shares for this many instead of giving 1 unit per subject.
   * A whole number from 1 to 10,000. Default: none.
   */
  minInstances?: number;
  /**
   * Longest wait for one store call, for a store that does not bound its own calls (a custom store).
   * RedisStore and MemoryStore bound their own: set RedisStore's `timeoutMs` instead.
   * Default 100 ms.
   */
  timeoutMs?: Duration;
  /** Circuit breaker thresholds: after repeated failures the store is skipped and the failure mode applies at once. */
  breaker?: BreakerOptions;
  /** Called once per circuit breaker state change (open, half-open, closed), never once per request. Errors it throws are logged. */
  onStoreError?: (event: StoreErrorEvent) => void;
  /**
   * Receives one error line at the first failed store call of each outage (what failed, and what
   * this store's endpoints now do by their failMode), the same state changes as `onStoreError`
   * ('open' as error, the others as warn), and configuration warnings. Default `console`.
   */
  logger?: Logger;
}

/** The names of the failure options (part of createLimiter's). */
export const FAILURE_OPTION_NAMES = optionNames<FailureOptions>()(['failMode', 'instances', 'minInstances', 'timeoutMs', 'breaker', 'onStoreError', 'logger']);

export interface ResolvedFailureOptions {
  readonly failMode: FailMode;
  /** A fixed count; undefined: learned through the store ('auto'). */
  readonly instances: number | undefined;
  /** The app's floor for a learned count ('auto' only); undefined: none. */
  readonly minInstances: number | undefined;
  /** The limiter's own deadline; undefined when the store bounds its calls itself. */
  readonly timeoutMs: number | undefined;
  readonly breaker: ResolvedBreakerOptions;
  readonly onStoreError: ((event: StoreErrorEvent) => void) | undefined;
  readonly logger: Logger;
}

/** Parses the failure options once; `store` decides whether the limiter needs a deadline of its own. */
export function resolveFailureOptions(options: FailureOptions, store: Store): ResolvedFailureOptions {
  const failMode = options.failMode ?? DEFAULT_FAIL_MODE;
  if (!FAIL_MODES.includes(failMode)) invalidOption('failMode', failMode, `one of ${FAIL_MODES.join(', ')}`);
  const given = options.instances ?? 'auto';
  const instances = given === 'auto' ? undefined : wholeNumber('instances', given, 1, MAX_INSTANCES, "or 'auto' (learned through the store, the default)");
  let minInstances: number | undefined;
  if (options.minInstances !== undefined) {
    if (instances !== undefined) invalidOption('minInstances', options.minInstances, `no minInstances with a fixed instances (${instances}): it is a floor for instances: 'auto'`);
    minInstances = wholeNumber('minInstances', options.minInstances, 1, MAX_INSTANCES);
  }
  let timeoutMs: number | undefined;
  if (typeof store.timeoutMs === 'number') {
    if (options.timeoutMs !== undefined) {
      invalidOption('timeoutMs', options.timeoutMs, `no limiter timeoutMs with a store that bounds its own calls (${store.name}: set the store's timeoutMs)`);
    }
  } else {
    timeoutMs = parseDuration('timeoutMs', options.timeoutMs ?? 100, 1, 60_000);
  }
  const onStoreError = options.onStoreError;
  if (onStoreError !== undefined && typeof onStoreError !== 'function') {
    invalidOption('onStoreError', onStoreError, 'a function (event) => void');
  }
  const logger = loggerOption('logger', options.logger);
  return { failMode, instances, minInstances, timeoutMs, breaker: resolveBreakerOptions(options.breaker), onStoreError, logger };
}

/**
 * The count local shares are cut for, and where it comes from: the fleet's own, raised to the
 * app's `minInstances`; before any count, `minInstances`, else Infinity (a share of 1 unit).
 */
export function localFleet(fleet: FleetView, minInstances: number | undefined): FleetView {
  const floor = minInstances ?? 1;
  return {
    get instances() {
      if (fleet.source === 'unlearned') return minInstances ?? Infinity;
      return fleet.source === 'fixed' ? fleet.instances : Math.max(fleet.instances, floor);
    },
    get source(): FleetSource {
      if (fleet.source === 'unlearned') return minInstances === undefined ? 'unlearned' : 'declared';
      return fleet.source !== 'fixed' && fleet.instances < floor ? 'declared' : fleet.source;
    },
    get learnedAt() {
      return fleet.learnedAt;
    },
    get failures() {
      return fleet.failures;
    },
    prefix: fleet.prefix,
    learning: fleet.learning,
  };
}

/**
 * Each limit cut to this instance's share: floor(limit / instances), at least 1; refill rates shared
 * the same way. `instances` Infinity (a fleet not counted yet): 1 unit, refilled at rate / limit.
 */
export function localLimits(limits: readonly ResolvedLimit[], instances: number): ResolvedLimit[] {
  return limits.map((l) => {
    const capacity = Math.max(1, Math.floor(l.limit / instances));
    if ('refillPerSecond' in l.store) {
      const rate = l.store.refillPerSecond / (Number.isFinite(instances) ? instances : l.limit);
      return { ...l, limit: capacity, windowMs: Math.ceil((capacity * 1000) / rate), store: { ...l.store, capacity, refillPerSecond: rate } };
    }
    return { ...l, limit: capacity, store: { ...l.store, capacity } };
  });
}

/** What a request gets when the store could not decide it: a degraded Decision, per the failure mode. */
export interface Fallback {
  decide(request: StoreRequest): Decision;
  /**
   * This instance's share, from memory (reason 'fail-local'): failMode 'local', and any mode's
   * answer while the store is overloaded. `ownPending`: this request's own call may still be
   * counted by the store (it timed out): it is not one of the others the store may count.
   */
  local(request: StoreRequest, ownPending?: boolean): Decision;
  /** The store's answer to a request (in time or late): what it says is left caps the subject's local decisions (failure/subject-memory.ts). */
  remember(request: StoreRequest, result: StoreResult): void;
  /** Units of a consume asked of the store (+cost), or whose answer or failure is known (-cost): units the store may still count cap the subject's local decisions. */
  pending(request: StoreRequest, units: number): void;
  /** Where a lease taken from memory (a local decision) is released and renewed. */
  readonly leases: { evaluate(request: StoreRequest): Promise<unknown> };
  /** Forgets a subject's local counts, with the limiter's reset(). */
  reset(keys: readonly string[]): void;
}

/**
 * `fleet`: how many instances share the limit now (localFleet: fixed, learned, recorded, declared
 * or not yet known; its count is read at every local decision, and the shares are cut again when
 * it changes). `clock`: the limiter's, for what the store last said of each subject.
 */
export function createFallback(limits: readonly ResolvedLimit[], failure: ResolvedFailureOptions, breaker: CircuitBreaker, fleet: FleetView, clock: () => number): Fallback {
  // Retry-After for a refusal the store did not make: when the breaker will look at the store
  // again, and never under a second, so refused clients do not hammer a recovering service.
  const retryMs = () => Math.max(1_000, breaker.msUntilProbe());
  // Made at the first local decision (most limiters never need one), and again when the count changes.
  let shares: { instances: number; limits: ResolvedLimit[]; storeLimits: StoreLimit[] } | undefined;
  // Made at the first local decision too: its LRU preallocates its slots (1.6 MB with the default
  // 100,000 keys), and most limiters never decide locally; an app with many routes has many limiters.
  let memory: MemoryStore | undefined;
  const subjects = new SubjectMemory(clock);
  const local = (request: StoreRequest, ownPending = false): Decision => {
    memory ??= new MemoryStore();
    const instances = fleet.instances;
    if (shares?.instances !== instances) {
      const cut = localLimits(limits, instances);
      shares = { instances, limits: cut, storeLimits: cut.map((l) => l.store) };
    }
    // What the store last said is left for this subject caps its share of it (a consume only).
    // So do the units of this subject still asked of the store, which it may count yet.
    const others = request.mode === 'consume' ? subjects.pendingOf(request.keys) - (ownPending ? request.cost : 0) : 0;
    const allowance = request.mode === 'consume' ? subjects.allowance(request.keys, request.limits, instances, others) : undefined;
    if (allowance !== undefined && request.cost > allowance) return spent(request, allowance);
    // Same keys as the shared store, so a subject's local bucket is the one it has there.
    const result = memory.evaluateSync({ keys: request.keys, limits: shares.storeLimits, cost: request.cost, mode: request.mode, token: request.token, maxDelayMs: request.maxDelayMs });
    if (allowance !== undefined && result.allowed) subjects.used(request.keys, request.limits, request.cost);
    const decision = toDecision(shares.limits, result.allowed, result.results, request.cost, 'fail-local', true, undefined, result.at);
    // A cost above the local share may well fit the shared limit once the store is back.
    return decision.retryAfterMs < 0 ? { ...decision, retryAfterMs: retryMs() } : decision;
  };
  // A refusal for a subject whose share of what the store said was left is spent: the local figures, capped at what is left.
  const spent = (request: StoreRequest, allowance: number): Decision => {
    const peek = memory!.evaluateSync({ keys: request.keys, limits: shares!.storeLimits, cost: request.cost, mode: 'peek' });
    const retryAfterMs = retryMs();
    const results = peek.results.map((r) => ({ allowed: false, remaining: Math.min(r.remaining, allowance), resetMs: Math.max(r.resetMs, retryAfterMs), retryAfterMs }));
    return toDecision(shares!.limits, false, results, request.cost, 'fail-local', true, undefined, peek.at);
  };
  // Nothing to forget before the first local decision.
  const reset = (keys: readonly string[]) => {
    subjects.forget(keys);
    void memory?.reset(keys);
  };
  const remember = (request: StoreRequest, result: StoreResult) => subjects.remember(request, result);
  const pending = (request: StoreRequest, units: number) => subjects.pending(request.keys, units);
  // A lease's release and renewal name only the lease limit (its length is all they read).
  const leases = { evaluate: (request: StoreRequest) => Promise.resolve((memory ??= new MemoryStore()).evaluateSync(request)) };
  switch (failure.failMode) {
    case 'open':
      return { decide: () => bareDecision(true, 'fail-open'), local, remember, pending, leases, reset };
    case 'closed':
      return { decide: () => bareDecision(false, 'fail-closed', retryMs()), local, remember, pending, leases, reset };
    case 'local':
      return { decide: local, local, remember, pending, leases, reset };
  }
}
