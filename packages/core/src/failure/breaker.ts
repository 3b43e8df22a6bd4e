// Circuit breaker for one store: after repeated failures the store is skipped for a cool-down, then probed by one call.
import type { Duration } from '../base/duration';
import { parseDuration } from '../base/duration';
import { invalidOption } from '../base/errors';
import { checkOptionNames, optionNames, wholeNumber } from '../base/validate';
import type { BreakerState } from '../observe/states';

export interface BreakerOptions {
  /** Consecutive failed store calls that open the breaker. A whole number from 1 to 1000. Default 5. */
  failureThreshold?: number;
  /**
   * How long the store is skipped once the breaker opens; then one request probes it. Each failed
   * probe doubles the wait, up to `maxCoolDownMs`. Default 1_000 ms.
   */
  coolDownMs?: Duration;
  /** The longest wait between probes. At least `coolDownMs`. Default 10_000 ms (or `coolDownMs` if larger). */
  maxCoolDownMs?: Duration;
}

const BREAKER_OPTION_NAMES = optionNames<BreakerOptions>()(['failureThreshold', 'coolDownMs', 'maxCoolDownMs']);

export interface ResolvedBreakerOptions {
  readonly failureThreshold: number;
  readonly coolDownMs: number;
  readonly maxCoolDownMs: number;
}

/** One change of the breaker's state. */
export interface BreakerTransition {
  readonly from: BreakerState;
  readonly to: BreakerState;
  /** The failure that caused it (to 'open'); undefined for 'half-open' and 'closed'. */
  readonly error?: unknown;
  /** Consecutive failures counted when it happened. */
  readonly failures: number;
  /** ms until the next probe may go to the store (to 'open'); 0 otherwise. */
  readonly retryInMs: number;
}

/** What the breaker lets one store call do. */
export type Admission = 'call' | 'probe' | 'skip';

export function resolveBreakerOptions(raw: BreakerOptions | undefined): ResolvedBreakerOptions {
  if (raw === undefined) raw = {};
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) invalidOption('breaker', raw, 'an object { failureThreshold, coolDownMs, maxCoolDownMs }');
  checkOptionNames('breaker', raw, BREAKER_OPTION_NAMES);
  const failureThreshold = wholeNumber('breaker.failureThreshold', raw.failureThreshold ?? 5, 1, 1000);
  const coolDownMs = parseDuration('breaker.coolDownMs', raw.coolDownMs ?? 1_000, 1, 3_600_000);
  const maxCoolDownMs = parseDuration('breaker.maxCoolDownMs', raw.maxCoolDownMs ?? Math.max(10_000, coolDownMs), 1, 3_600_000);
  if (maxCoolDownMs < coolDownMs) {
    invalidOption('breaker.maxCoolDownMs', raw.maxCoolDownMs, `at least breaker.coolDownMs (${coolDownMs})`);
  }
  return { failureThreshold, coolDownMs, maxCoolDownMs };
}

/**
 * closed: every call goes to the store; `failureThreshold` consecutive failures open it.
 * open: no call goes to the store until the cool-down ends; the first call after it is the probe.
 * half-open: the probe is in flight; every other call is skipped. Its success closes the breaker,
 * its failure opens it again with twice the cool-down (capped), so a long outage is probed, and
 * logged, less and less often.
 * Any success closes it: an answer from the store is the best evidence that it is back.
 * The store's word that its connection is ready again (`reconnected`) is the next best: an open
 * breaker then probes at the next request and forgets its doubled cool-down, so a route that fails
 * closed serves again as soon as the store answers, not a long back-off later.
 */
export class CircuitBreaker {
  private current: BreakerState = 'closed';
  private failures = 0;
  private waitMs: number;
  private probeAt = 0;
  // True from the first failed call until the store answers again: one outage.
  private failing = false;
  private readonly listeners = new Set<(t: BreakerTransition) => void>();

  constructor(
    readonly options: ResolvedBreakerOptions,
    readonly clock: () => number,
  ) {
    this.waitMs = options.coolDownMs;
  }

  get state(): BreakerState {
    return this.current;
  }

  /** Failed calls in a row, counted while closed and by failed probes; 0 after any success. */
  get consecutiveFailures(): number {
    return this.failures;
  }

  /** True from the first failed call of an outage until the store answers again. */
  get inOutage(): boolean {
    return this.failing;
  }

  /** Called once per state change. Returns the unsubscribe function. */
  subscribe(listener: (t: BreakerTransition) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Whether the next store call may go ahead; 'probe' claims the one call allowed in half-open. */
  admit(): Admission {
    if (this.current === 'closed') return 'call';
    if (this.current === 'open' && this.clock() >= this.probeAt) {
      this.move('half-open', undefined, 0);
      return 'probe';
    }
    return 'skip';
  }

  success(): void {
    this.failures = 0;
    this.failing = false;
    if (this.current !== 'closed') {
      this.waitMs = this.options.coolDownMs;
      this.move('closed', undefined, 0);
    }
  }

  /** One store call failed (`probe`: it was the half-open breaker's probe). */
  failure(error: unknown, probe: boolean): void {
    this.failing = true;
    if (this.current === 'closed') {
      this.failures++;
      if (this.failures >= this.options.failureThreshold) this.open(error);
    } else if (this.current === 'half-open' && probe) {
      this.failures++;
      this.waitMs = Math.min(this.waitMs * 2, this.options.maxCoolDownMs);
      this.open(error);
    }
    // Failures of calls that started before the breaker opened change nothing: it is already open.
  }

  /** The store's connection is ready again: probe at the next request, and back off from the start. */
  reconnected(): void {
    this.waitMs = this.options.coolDownMs;
    if (this.current === 'open') this.probeAt = this.clock();
  }

  /** ms until a probe may go to the store: 0 when closed or a probe may go now. */
  msUntilProbe(): number {
    if (this.current === 'closed') return 0;
    if (this.current === 'half-open') return this.waitMs;
    return Math.max(0, this.probeAt - this.clock());
  }

  private open(error: unknown): void {
    this.probeAt = this.clock() + this.waitMs;
    this.move('open', error, this.waitMs);
  }

  private move(to: BreakerState, error: unknown, retryInMs: number): void {
    const transition: BreakerTransition = { from: this.current, to, error, failures: this.failures, retryInMs };
    this.current = to;
    for (const listener of this.listeners) listener(transition);
  }
}
