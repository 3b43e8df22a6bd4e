// The guard every call to a shared store passes (consume, peek, refund, reset): the breaker's admission, the deadline, the counts.
import type { Attributes } from '@opentelemetry/api';
import { lateAnswer, withDeadline } from '../base/deadline';
import { FloodgateError, withoutStack } from '../base/errors';
import { monotonicSource } from '../base/monotonic';
import { recordFailure } from '../observe/health';
import { ATTR, STORE_ERROR_KINDS, type FloodgateMetrics, type StoreErrorKind } from '../observe/metrics';
import type { Store, StoreRequest, StoreResult, StoreSink } from '../stores/store';
import type { Admission } from './breaker';
import type { FailMode } from './policy';
import type { StoreChannel } from './store-runtime';

/** Thrown, never logged, for a call the open breaker skips: the failure mode answers it. */
export const BREAKER_SKIP = new FloodgateError('FG_STORE_UNAVAILABLE', 'Store skipped: circuit breaker open.');

const ignore = (): void => undefined;

/**
 * A timeout is slowness, not an outage, when the connection answered something no earlier than this
 * many deadlines before the call began. Two, so that a store answering in bursts (each call queued
 * behind a long command) is still seen as alive; the cost is that a store that just died is
 * recognised one deadline later (its first calls' timeouts do not count), while the in-flight bound
 * keeps what waits meanwhile small.
 */
const SLOW_WINDOW_DEADLINES = 2;

/** The store refused the call because it has `maxInFlight` calls in flight: busy, not failing. */
export const isOverload = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === 'FG_STORE_OVERLOADED';

/** The script failed on this request's own subject; its call answered the others: the store is alive. */
export const isScriptError = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === 'FG_STORE_SCRIPT';

/**
 * What every call to the shared store goes through, whether it answers through a promise or at
 * once: the breaker's admission, the call count, the duration (only with an SDK), the outcome for
 * the breaker and the health snapshot. Attribute objects are built once per limiter, never per call.
 */
export class CallBook {
  private readonly ok: Attributes;
  private readonly failedAttributes = {} as Record<StoreErrorKind, Attributes>;
  /** The monotonic clock, kept (base/monotonic.ts): read twice a call. */
  private readonly perf = monotonicSource();

  constructor(
    private readonly channel: StoreChannel,
    private readonly meter: FloodgateMetrics,
    private readonly failMode: FailMode,
    /** The store's deadline per call, ms: the scale of "recently" for a slow store. */
    private readonly deadlineMs: number,
  ) {
    const name = channel.runtime.store.name;
    this.ok = { [ATTR.store]: name };
    for (const kind of STORE_ERROR_KINDS) this.failedAttributes[kind] = { [ATTR.store]: name, [ATTR.errorType]: kind };
  }

  /**
   * The breaker's admission for a call about to be made, counted; throws BREAKER_SKIP when it skips the
   * call. The caller keeps when it began (performance.now()) and the connection's answer count then
   * (`answers`) in locals: no object per call.
   */
  begin(): Admission {
    const admission = this.channel.breaker.admit();
    if (admission === 'skip') throw BREAKER_SKIP;
    this.channel.monitor.calls++;
    return admission;
  }

  /** Whether calls are timed (an SDK is registered): only then is a call's start read before it is made. */
  get timed(): boolean {
    return this.meter.timed;
  }

  /** The monotonic clock (performance.now()): when a call begins. */
  now(): number {
    return this.perf.now();
  }

  /** The connection's answer count now: a call's `answers` when it begins. */
  get answers(): number {
    return this.channel.runtime.connection.answers;
  }

  succeeded(started: number): void {
    if (this.meter.timed) this.meter.storeDuration.record((this.perf.now() - started) / 1000, this.ok);
    this.alive();
  }

  /**
   * A call failed; returns the error its caller gets. What it tells the breaker depends on the
   * signal (docs/failure-modes.md#slow-is-not-down):
   * - FG_STORE_OVERLOADED (the call waited for a free place among the store's `maxInFlight` until
   *   its deadline, and was never sent) while the connection kept answering: busy, not failing;
   *   not counted against the breaker, and the limiter decides locally with this instance's share.
   *   With no answer at all meanwhile it is an outage's timeout: counted, and the failure mode answers.
   * - a timeout while the connection kept answering other calls (answers arrived since this call
   *   began): the store is slow, not gone; counted as a timeout, not against the breaker.
   * - FG_STORE_SCRIPT (the script failed on this request's own subject, and its call answered the
   *   others): the store answered, so it counts as an answer, never against the breaker; the
   *   limiter decides the request locally; the first is logged (scriptErrors in health()).
   * - any other failure, or a timeout with no recent answer: counts against the breaker.
   * The half-open breaker's probe is the exception: its failure always counts, so a dead store is
   * probed again later rather than never. A timed-out call's late answer, when it comes, is
   * evidence of life: the breaker closes.
   */
  failed(error: unknown, admission: Admission, started: number, answers: number): unknown {
    const { breaker, monitor, reporters } = this.channel;
    const connection = this.channel.runtime.connection;
    const call = admission === 'call';
    if (isScriptError(error)) {
      // One subject's own failure, in a call the store answered: an answer (evidence of life), not a failure.
      if (monitor.scriptErrors++ === 0) reporters.scriptError(error);
      this.succeeded(started);
      return error;
    }
    if (isOverload(error)) {
      if (call && connection.answers > answers) {
        monitor.shed++;
        return error;
      }
      const said = (error as Error).message.split(' [')[0];
      error = withoutStack(() => new FloodgateError('FG_STORE_TIMEOUT', `${said} The store answered nothing meanwhile.`));
    }
    const kind = recordFailure(monitor, error);
    if (this.meter.timed) this.meter.storeDuration.record((this.perf.now() - started) / 1000, this.failedAttributes[kind]);
    this.meter.storeErrors.add(1, this.failedAttributes[kind]);
    const late = lateAnswer(error);
    if (late) {
      late.then(this.lateAnswered, ignore);
      if (call && connection.lastAnswerAt >= started - SLOW_WINDOW_DEADLINES * this.deadlineMs) {
        monitor.slowTimeouts++;
        return error;
      }
    }
    // The outage's first line comes before any state change this failure causes.
    if (!breaker.inOutage) reporters.firstFailure(error, this.failMode);
    breaker.failure(error, admission === 'probe');
    return error;
  }

  /** The store answered a call after its deadline: slow, but alive. */
  private readonly lateAnswered = (): void => {
    this.channel.monitor.lateAnswers++;
    this.alive();
  };

  /** An answer from the store, on time or late: the best evidence that it is there. */
  private alive(): void {
    const channel = this.channel;
    const connection = channel.runtime.connection;
    const now = this.perf.now();
    connection.answers++;
    connection.lastAnswerAt = now;
    // monitor.lastSuccessAt is worked out from it when read (store-runtime.ts): no Date.now() per answer.
    channel.answeredAt = now;
    channel.breaker.success();
  }

  /**
   * `run(arg)` as one guarded call: skipped by the open breaker (rejects BREAKER_SKIP), else counted
   * and bounded. `track`, when given, hears that the call went out and, before any caller hears
   * the outcome, that it ended (its error, undefined on success): in the call's own reactions, not
   * in a promise reaction of its own.
   */
  call<A, T>(run: (arg: A) => Promise<T>, arg: A, track?: CallTrack<A>): Promise<T> {
    return this.callThen(run, arg, track, same, rethrow);
  }

  /**
   * `call(run, arg, track).then(answered, failed)` in one promise reaction: the bookkeeping, then
   * the caller's own continuation, in the call's reactions. What a decision uses (one promise and
   * one microtask a decision fewer than `call` and a `.then` of the caller's own).
   */
  callThen<A, T, R>(run: (arg: A) => Promise<T>, arg: A, track: CallTrack<A> | undefined, answered: (result: T) => R, failed: (error: unknown) => R): Promise<R> {
    let admission: Admission;
    let pending: Promise<T>;
    try {
      admission = this.begin();
    } catch (skipped) {
      return Promise.reject(skipped).then(answered, failed);
    }
    const started = this.perf.now();
    const answers = this.answers;
    try {
      pending = run(arg);
      track?.sent(arg);
    } catch (error) {
      pending = Promise.reject(error);
      track = undefined;
    }
    // Every call's one pair of closures: `run` and `arg` come in apart, so a request needs no thunk of its own.
    return pending.then(
      (result) => {
        track?.ended(arg, undefined);
        this.succeeded(started);
        return answered(result);
      },
      (error: unknown) => {
        track?.ended(arg, error);
        return failed(this.failed(error, admission, started, answers));
      },
    );
  }

  /**
   * `callThen` for a store that tells a sink (Store.evaluateTo): the bookkeeping and the caller's
   * continuation run where the store would settle the request's promise, and the one promise made
   * is the caller's. No promise of the store's, no reaction and no microtask between them. `track`
   * hears `sent` before the store is asked (the store may tell the sink before evaluateTo returns).
   */
  callTo<R>(
    store: { evaluateTo(request: StoreRequest, sink: StoreSink): void },
    request: StoreRequest,
    track: CallTrack<StoreRequest> | undefined,
    answered: (result: StoreResult) => R,
    failed: (error: unknown) => R,
  ): Promise<R> {
    let admission: Admission;
    try {
      admission = this.begin();
    } catch (skipped) {
      return Promise.reject(skipped).then(answered, failed);
    }
    const call = new SinkCall(this, admission, this.perf.now(), this.answers, request, track, answered, failed);
    sinking = call as SinkCall<unknown>;
    const promise = new Promise<R>(fillSink as (resolve: (value: R | PromiseLike<R>) => void, reject: (error: unknown) => void) => void);
    sinking = undefined;
    track?.sent(request);
    try {
      store.evaluateTo(request, call);
    } catch (error) {
      call.failed(error);
    }
    return promise;
  }
}

/** One call of `CallBook.callTo`: told once by the store; the bookkeeping, then the continuation, its outcome settling the caller's promise. */
class SinkCall<R> implements StoreSink {
  resolve: (value: R | PromiseLike<R>) => void = ignore;
  reject: (error: unknown) => void = ignore;
  private told = false;

  constructor(
    private readonly book: CallBook,
    private readonly admission: Admission,
    private readonly started: number,
    private readonly answers: number,
    private readonly request: StoreRequest,
    private readonly track: CallTrack<StoreRequest> | undefined,
    private readonly onAnswer: (result: StoreResult) => R,
    private readonly onFailure: (error: unknown) => R,
  ) {}

  answered(result: StoreResult): void {
    if (this.told) return;
    this.told = true;
    // Never thrown back into the store (which tells its other requests next): a throw rejects this caller's promise, as in a reaction.
    try {
      this.track?.ended(this.request, undefined);
      this.book.succeeded(this.started);
      this.resolve(this.onAnswer(result));
    } catch (error) {
      this.reject(error);
    }
  }

  failed(error: unknown): void {
    if (this.told) return;
    this.told = true;
    try {
      this.track?.ended(this.request, error);
      this.resolve(this.onFailure(this.book.failed(error, this.admission, this.started, this.answers)));
    } catch (thrown) {
      this.reject(thrown);
    }
  }
}

/** The SinkCall whose promise `new Promise(fillSink)` is making: its executor runs at once, so no executor closure per call. */
let sinking: SinkCall<unknown> | undefined;
const fillSink = (resolve: (value: unknown) => void, reject: (error: unknown) => void): void => {
  sinking!.resolve = resolve;
  sinking!.reject = reject;
};

const same = <T>(result: T): T => result;
const rethrow = (error: unknown): never => {
  throw error;
};

/** What `CallBook.call` tells about a call it made: sent, then ended (with its error, or undefined). */
export interface CallTrack<A> {
  sent(arg: A): void;
  ended(arg: A, error: unknown): void;
}

/**
 * The shared store behind its breaker and deadline: a call the breaker skips rejects at once, every
 * other (reset included) is bounded by `timeoutMs` (when the store does not bound its own calls)
 * and counted by the breaker.
 */
/** A guarded store, and its `evaluate` with the caller's continuation in the call's own reaction (CallBook.callThen). */
export interface GuardedStore extends Store {
  evaluateThen<R>(request: StoreRequest, answered: (result: StoreResult) => R, failed: (error: unknown) => R): Promise<R>;
}

export function guarded(shared: Store, timeoutMs: number | undefined, book: CallBook, pending?: (request: StoreRequest, units: number) => void): GuardedStore {
  const what = `Store "${shared.name}"`;
  const bounded = <T>(promise: Promise<T>): Promise<T> => (timeoutMs === undefined ? promise : withDeadline(promise, timeoutMs, what));
  // Made once: a call passes its request (or keys) beside them, never in a closure of its own.
  const plain = (request: StoreRequest): Promise<StoreResult> => bounded(shared.evaluate(request));
  // A consume's units are pending from when the store is asked until it answers or fails, late
  // answers included: the store may count them meanwhile (failure/subject-memory.ts). Told before
  // any caller hears the outcome (in the call's own reactions, which run before its caller's).
  const track: CallTrack<StoreRequest> | undefined =
    pending === undefined
      ? undefined
      : {
          sent: (request) => pending(request, request.cost),
          ended(request, error) {
            const late = error === undefined ? undefined : lateAnswer(error);
            if (late === undefined) pending(request, -request.cost);
            else {
              const done = (): void => pending(request, -request.cost);
              late.then(done, done);
            }
          },
        };
  const evaluate = (request: StoreRequest): Promise<StoreResult> => book.call(plain, request, request.mode === 'consume' ? track : undefined);
  const reset = (keys: readonly string[]): Promise<void> => bounded(shared.reset(keys));
  // A store that bounds its own calls and tells a sink (RedisStore): the continuation in its answer, no promise between.
  const sinks = timeoutMs === undefined && typeof shared.evaluateTo === 'function' ? (shared as Store & { evaluateTo: NonNullable<Store['evaluateTo']> }) : undefined;
  return {
    name: shared.name,
    timeoutMs: timeoutMs ?? shared.timeoutMs,
    evaluate,
    evaluateThen: sinks
      ? (request, answered, failed) => book.callTo(sinks, request, request.mode === 'consume' ? track : undefined, answered, failed)
      : (request, answered, failed) => book.callThen(plain, request, request.mode === 'consume' ? track : undefined, answered, failed),
    reset: (keys) => book.call(reset, keys),
  };
}

/**
 * A store that decides synchronously (MemoryStore) behind the same bookkeeping as `guarded`'s
 * calls: a call the breaker skips throws at once; a throw is a store failure.
 */
export function guardedSync(shared: Store & { evaluateSync: NonNullable<Store['evaluateSync']> }, book: CallBook): (request: StoreRequest) => StoreResult {
  return (request) => {
    const admission = book.begin();
    // Read only when a duration is recorded: a call that answers at once begins when it ends, so a
    // failure's start is read then (no clock read per decision without an SDK).
    const started = book.timed ? book.now() : 0;
    const answers = book.answers;
    let result;
    try {
      result = shared.evaluateSync(request);
    } catch (error) {
      throw book.failed(error, admission, book.timed ? started : book.now(), answers);
    }
    book.succeeded(started);
    return result;
  };
}
