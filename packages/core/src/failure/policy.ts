// Failure policy: what a request gets when the store cannot decide (open, closed, local), and how it is reported.
import type { StoreLimit } from '../algorithms/registry';
import { bareDecision, toDecision, type Decision } from '../decision';
import { parseDuration, type Duration } from '../duration';
import { invalidOption } from '../errors';
import type { ResolvedLimit } from '../limit';
import type { Logger } from '../logger';
import { loggerOption, MAX_INSTANCES, optionNames, wholeNumber } from '../validate';
import { MemoryStore } from '../stores/memory-store';
import type { Store, StoreRequest } from '../stores/store';
import { resolveBreakerOptions, type BreakerOptions, type BreakerState, type CircuitBreaker, type ResolvedBreakerOptions } from './breaker';

export const FAIL_MODES = ['open', 'closed', 'local'] as const;

/**
 * What a request gets when the store fails, times out, or is skipped by the open circuit breaker.
 * - `open`: served without limiting (reason 'fail-open').
 * - `closed`: refused, 503 with Retry-After (reason 'fail-closed').
 * - `local`: limited from this instance's memory with its share of the limit, `limit / instances`
 *   (reason 'fail-local').
 */
export type FailMode = (typeof FAIL_MODES)[number];

export type { Logger } from '../logger';

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
   * What a request gets when the store cannot decide: 'open' (serve, unlimited), 'closed' (503 +
   * Retry-After) or 'local' (limit from memory with `limit / instances`). Set it per route: auth
   * routes fail closed, customer-facing routes open or local. Default 'open': a rate limiter
   * guards the service and should not take it down with its store (see docs/failure-modes.md).
   */
  failMode?: FailMode;
  /**
   * How many instances share the limit, for `failMode: 'local'`: each one then admits
   * `floor(limit / instances)` (at least 1), so together they stay near the shared limit. Default 1.
   */
  instances?: number;
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
export const FAILURE_OPTION_NAMES = optionNames<FailureOptions>()(['failMode', 'instances', 'timeoutMs', 'breaker', 'onStoreError', 'logger']);

export interface ResolvedFailureOptions {
  readonly failMode: FailMode;
  readonly instances: number;
  /** The limiter's own deadline; undefined when the store bounds its calls itself. */
  readonly timeoutMs: number | undefined;
  readonly breaker: ResolvedBreakerOptions;
  readonly onStoreError: ((event: StoreErrorEvent) => void) | undefined;
  readonly logger: Logger;
}

/** Parses the failure options once; `store` decides whether the limiter needs a deadline of its own. */
export function resolveFailureOptions(options: FailureOptions, store: Store): ResolvedFailureOptions {
  const failMode = options.failMode ?? 'open';
  if (!FAIL_MODES.includes(failMode)) invalidOption('failMode', failMode, `one of ${FAIL_MODES.join(', ')}`);
  const instances = wholeNumber('instances', options.instances ?? 1, 1, MAX_INSTANCES);
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
  return { failMode, instances, timeoutMs, breaker: resolveBreakerOptions(options.breaker), onStoreError, logger };
}

/** Each limit cut to this instance's share: floor(limit / instances), at least 1; refill rates shared the same way. */
export function localLimits(limits: readonly ResolvedLimit[], instances: number): ResolvedLimit[] {
  return limits.map((l) => {
    const capacity = Math.max(1, Math.floor(l.limit / instances));
    if ('refillPerSecond' in l.store) {
      const rate = l.store.refillPerSecond / instances;
      return { ...l, limit: capacity, windowMs: Math.ceil((capacity * 1000) / rate), store: { ...l.store, capacity, refillPerSecond: rate } };
    }
    return { ...l, limit: capacity, store: { ...l.store, capacity } };
  });
}

/** What a request gets when the store could not decide it: a degraded Decision, per the failure mode. */
export interface Fallback {
  decide(request: StoreRequest): Decision;
  /** This instance's share, from memory (reason 'fail-local'): failMode 'local', and any mode's answer while the store is overloaded. */
  local(request: StoreRequest): Decision;
  /** Where a lease taken from memory (a local decision) is released and renewed. */
  readonly leases: { evaluate(request: StoreRequest): Promise<unknown> };
  /** Forgets a subject's local counts, with the limiter's reset(). */
  reset(keys: readonly string[]): void;
}

export function createFallback(limits: readonly ResolvedLimit[], failure: ResolvedFailureOptions, breaker: CircuitBreaker): Fallback {
  // Retry-After for a refusal the store did not make: when the breaker will look at the store
  // again, and never under a second, so refused clients do not hammer a recovering service.
  const retryMs = () => Math.max(1_000, breaker.msUntilProbe());
  // Made at the first local decision: most limiters never need one.
  let shares: { limits: ResolvedLimit[]; storeLimits: StoreLimit[] } | undefined;
  const memory = new MemoryStore();
  const local = (request: StoreRequest): Decision => {
    if (!shares) {
      const cut = localLimits(limits, failure.instances);
      shares = { limits: cut, storeLimits: cut.map((l) => l.store) };
    }
    // Same keys as the shared store, so a subject's local bucket is the one it has there.
    const result = memory.evaluateSync({ keys: request.keys, limits: shares.storeLimits, cost: request.cost, mode: request.mode, token: request.token });
    const decision = toDecision(shares.limits, result.allowed, result.results, request.cost, 'fail-local', true, undefined, result.at);
    // A cost above the local share may well fit the shared limit once the store is back.
    return decision.retryAfterMs < 0 ? { ...decision, retryAfterMs: retryMs() } : decision;
  };
  const reset = (keys: readonly string[]) => void memory.reset(keys);
  // A lease's release and renewal name only the lease limit (its length is all they read).
  const leases = { evaluate: (request: StoreRequest) => Promise.resolve(memory.evaluateSync(request)) };
  switch (failure.failMode) {
    case 'open':
      return { decide: () => bareDecision(true, 'fail-open'), local, leases, reset };
    case 'closed':
      return { decide: () => bareDecision(false, 'fail-closed', retryMs()), local, leases, reset };
    case 'local':
      return { decide: local, local, leases, reset };
  }
}
