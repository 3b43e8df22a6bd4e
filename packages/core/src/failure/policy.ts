// Failure policy: what a request gets when the store cannot decide (open, closed, local), and how it is reported.
import { isThenable } from '../maybe-promise';
import { bareDecision, toDecision, type Decision } from '../decision';
import { parseDuration, type Duration } from '../duration';
import { invalidOption } from '../errors';
import type { ResolvedLimit } from '../limit';
import type { Logger } from '../logger';
import { loggerOption, MAX_INSTANCES, optionNames, wholeNumber } from '../validate';
import { MemoryStore } from '../stores/memory-store';
import type { Store, StoreRequest } from '../stores/store';
import { resolveBreakerOptions, type BreakerOptions, type BreakerState, type BreakerTransition, type CircuitBreaker, type ResolvedBreakerOptions } from './breaker';

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
  /** failMode 'local': where a lease taken from memory is released and renewed; undefined otherwise. */
  readonly leases?: { evaluate(request: StoreRequest): Promise<unknown> };
  /** Forgets a subject's local counts (failMode 'local'), with the limiter's reset(). */
  reset(keys: readonly string[]): void;
}

export function createFallback(limits: readonly ResolvedLimit[], failure: ResolvedFailureOptions, breaker: CircuitBreaker): Fallback {
  // Retry-After for a refusal the store did not make: when the breaker will look at the store
  // again, and never under a second, so refused clients do not hammer a recovering service.
  const retryMs = () => Math.max(1_000, breaker.msUntilProbe());
  const none = () => undefined;
  switch (failure.failMode) {
    case 'open':
      return { decide: () => bareDecision(true, 'fail-open'), reset: none };
    case 'closed':
      return { decide: () => bareDecision(false, 'fail-closed', retryMs()), reset: none };
    case 'local': {
      const local = localLimits(limits, failure.instances);
      const storeLimits = local.map((l) => l.store);
      const memory = new MemoryStore();
      return {
        decide(request) {
          // Same keys as the shared store, so a subject's local bucket is the one it has there.
          const result = memory.evaluateSync({ keys: request.keys, limits: storeLimits, cost: request.cost, mode: request.mode, token: request.token });
          const decision = toDecision(local, result.allowed, result.results, request.cost, 'fail-local', true);
          // A cost above the local share may well fit the shared limit once the store is back.
          return decision.retryAfterMs < 0 ? { ...decision, retryAfterMs: retryMs() } : decision;
        },
        reset: (keys) => void memory.reset(keys),
        // A lease's release and renewal name only the lease limit (its length is all they read).
        leases: { evaluate: (request) => Promise.resolve(memory.evaluateSync(request)) },
      };
    }
  }
}

interface Reporter {
  logger: Logger;
  hook: ((event: StoreErrorEvent) => void) | undefined;
  /** The failure modes of the limiters reporting here: what the endpoints on this store now do. */
  failModes: Set<FailMode>;
}

const reporters = new WeakMap<CircuitBreaker, Reporter[]>();

/** What an endpoint does while its store cannot decide, in the words of the first-failure line. */
const FAIL_MODE_DOES: Record<FailMode, string> = {
  open: 'served without limiting',
  closed: 'refused with 503 and Retry-After',
  local: "limited from this instance's memory with its share of the limit",
};

/**
 * Reports this breaker's state changes, and the first failed call of each outage, to this logger
 * and hook. Limiters that share a store share its breaker; with the same logger and hook (every
 * route of one app) a change is reported once, and the first-failure line names every failMode.
 */
export function reportTransitions(breaker: CircuitBreaker, storeName: string, logger: Logger, hook: Reporter['hook'], failMode: FailMode): void {
  let list = reporters.get(breaker);
  if (!list) reporters.set(breaker, (list = []));
  const known = list.find((r) => r.logger === logger && r.hook === hook);
  if (known) {
    known.failModes.add(failMode);
    return;
  }
  const reporter: Reporter = { logger, hook, failModes: new Set([failMode]) };
  list.push(reporter);
  breaker.subscribe((t) => report(t, storeName, logger, hook));
  breaker.onFirstFailure((f) => reportFirstFailure(f.error, f.context as FailMode | undefined, storeName, reporter, breaker.options.failureThreshold));
}

/** One line at the first failed call of an outage: what failed and what the endpoints now do. Logger only: the hook hears state changes. */
function reportFirstFailure(error: unknown, failMode: FailMode | undefined, store: string, reporter: Reporter, threshold: number): void {
  const mode = failMode !== undefined && reporter.failModes.has(failMode) ? failMode : [...reporter.failModes][0];
  const others = [...reporter.failModes].filter((m) => m !== mode);
  const also = others.length ? ` Other endpoints on this store: ${others.map((m) => `${FAIL_MODE_DOES[m]} (failMode '${m}')`).join('; ')}.` : '';
  const circuit = threshold > 1 ? ` The circuit opens after ${threshold} failures in a row.` : '';
  try {
    reporter.logger.error(
      `[floodgate] store "${store}" failed (${describe(error)}): requests it cannot decide are now ${FAIL_MODE_DOES[mode]} (failMode '${mode}').${also} Logged once until the store answers again.${circuit}`,
      { store, failMode: mode, failModes: [...reporter.failModes], error: describe(error) },
    );
  } catch {
    // A broken logger must not break requests.
  }
}

function report(t: BreakerTransition, store: string, logger: Logger, hook: Reporter['hook']): void {
  const event: StoreErrorEvent = { state: t.to, previous: t.from, store, error: t.error, failures: t.failures, retryInMs: t.retryInMs };
  const details = { store, state: t.to, previous: t.from, failures: t.failures, retryInMs: t.retryInMs, error: describe(t.error) };
  try {
    if (t.to === 'open') {
      logger.error(
        t.from === 'half-open'
          ? `[floodgate] store "${store}" still failing (${describe(t.error)}); circuit open again: next probe in ${t.retryInMs} ms, failure modes apply.`
          : `[floodgate] store "${store}" failed ${t.failures} times in a row (${describe(t.error)}); circuit open: store skipped for ${t.retryInMs} ms, failure modes apply.`,
        details,
      );
    } else if (t.to === 'half-open') {
      logger.warn(`[floodgate] store "${store}": circuit half-open, one request probes it.`, details);
    } else {
      logger.warn(`[floodgate] store "${store}" answered again; circuit closed, limiting resumed.`, details);
    }
  } catch {
    // A broken logger must not break requests.
  }
  if (!hook) return;
  try {
    const returned: unknown = hook(event);
    if (isThenable(returned)) Promise.resolve(returned).then(undefined, (error: unknown) => hookFailed(logger, error));
  } catch (error) {
    hookFailed(logger, error);
  }
}

function hookFailed(logger: Logger, error: unknown): void {
  try {
    logger.error(`[floodgate] onStoreError threw: ${describe(error)}`, { error: describe(error) });
  } catch {
    // nothing left to tell
  }
}

function describe(error: unknown): string | undefined {
  if (error === undefined) return undefined;
  if (error instanceof Error) return error.message;
  return String(error);
}
