// @floodgate/client/undici: floodgatePacing(options), an undici interceptor that composes with undici's own (Agent.compose).
import type { Dispatcher } from 'undici';
import { resolveCallOptions, type CallPacingOptions, type PacingOptions } from './options';
import { pacerFrom, type Pacer } from './pacer/pacer';
import type { Ticket } from './pacer/scope-state';
import { isProblemJson, parseProblemDetails, parseRateLimit, type ProblemInfo, type RateLimitInfo } from './parse';

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Parameters<NonNullable<Handler['onResponseStart']>>[2];

/** undici's dispatch options, plus this call's pacing options (`pacing`, removed before the request goes on). */
export type PacedDispatchOptions = Dispatcher.DispatchOptions & { pacing?: CallPacingOptions };

/** A body that can be sent again for a retry: a string, bytes or FormData; not a stream, read once. */
function replayable(body: unknown): boolean {
  return body === undefined || body === null || typeof body === 'string' || body instanceof Uint8Array || (typeof FormData !== 'undefined' && body instanceof FormData);
}

/** The call's scope from its origin and path; a dispatcher that passes no origin (a bare Client) is its own scope. */
function scopeOf(pacer: Pacer, opts: Dispatcher.DispatchOptions): string {
  try {
    return pacer.scopeOf(new URL(opts.path, opts.origin));
  } catch {
    return String(opts.origin ?? '(no origin)');
  }
}

/**
 * The controller the caller's handler keeps for the whole call: it outlives each attempt's own
 * controller (a wait, a retry), as undici's RetryHandler's does, and an abort during a wait ends the wait.
 */
class CallController implements Controller {
  target: Controller | undefined;
  private isPaused = false;
  private abortReason: Error | null = null;
  constructor(private readonly onAbort: (reason: Error) => void) {}
  get aborted(): boolean {
    return this.abortReason !== null;
  }
  get paused(): boolean {
    return this.isPaused;
  }
  get reason(): Error | null {
    return this.abortReason;
  }
  attach(target: Controller): void {
    this.target = target;
    if (this.isPaused) target.pause();
    if (this.abortReason) target.abort(this.abortReason);
  }
  abort(reason: Error): void {
    if (this.abortReason) return;
    this.abortReason = reason ?? new Error('aborted');
    if (this.target) this.target.abort(this.abortReason);
    else this.onAbort(this.abortReason);
  }
  pause(): void {
    this.isPaused = true;
    this.target?.pause();
  }
  resume(): void {
    this.isPaused = false;
    this.target?.resume();
  }
}

/** One call through the interceptor: waits, attempts and what the caller's handler is told. */
class PacedCall {
  readonly controller: CallController;
  private readonly waitAbort = new AbortController();
  finished = false;
  private readonly scope: string;
  private readonly budget;
  readonly method: string;
  readonly retryAllowed: boolean;

  constructor(
    readonly pacer: Pacer,
    private readonly dispatch: Dispatcher.Dispatch,
    private readonly opts: Dispatcher.DispatchOptions,
    call: CallPacingOptions,
    readonly caller: Handler,
  ) {
    this.scope = scopeOf(pacer, opts);
    this.budget = pacer.budget(call.maxWaitMs, this.waitAbort.signal);
    this.method = String(opts.method ?? 'GET').toUpperCase();
    this.retryAllowed = call.retry !== false && replayable(opts.body);
    this.controller = new CallController((reason) => this.waitAbort.abort(reason));
  }

  start(): void {
    // Told once, before any wait, so that the caller's abort (its signal, fetch's termination) reaches a waiting call.
    this.caller.onRequestStart?.(this.controller, {});
    void this.attempt(0);
  }

  fail(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.caller.onResponseError?.(this.controller, error);
  }

  private async attempt(attempt: number): Promise<void> {
    // While this attempt waits, an abort is the wait's: no earlier attempt's controller takes it.
    this.controller.target = undefined;
    let ticket: Ticket;
    try {
      ticket = await this.pacer.acquire(this.scope, this.budget);
    } catch (error) {
      this.fail(error as Error);
      return;
    }
    if (this.controller.aborted) {
      this.pacer.release(ticket);
      this.fail(this.controller.reason!);
      return;
    }
    try {
      this.dispatch(this.opts, this.attemptHandler(ticket, attempt));
    } catch (error) {
      this.pacer.release(ticket);
      this.fail(error as Error);
    }
  }

  /** The handler of one attempt: passes the response on, or holds it back when it is to be retried. */
  private attemptHandler(ticket: Ticket, attempt: number): Handler {
    return new AttemptHandler(this, ticket, attempt);
  }

  /** Starts the next attempt (after its wait): the call goes on without the one whose answer was refused. */
  retry(attempt: number): void {
    void this.attempt(attempt + 1);
  }
}

/** A problem+json answer held back while its body is read for a retry time. */
interface Held {
  status: number;
  headers: Headers;
  message?: string;
  info: RateLimitInfo;
  chunks: Buffer[];
  size: number;
}

/**
 * One attempt's handler. Its answer goes to the caller as it comes (`pass`); a 429/503 problem+json
 * with no Retry-After field is held while its body is read for one (`buffer`), up to
 * problemBodyMaxBytes and problemBodyTimeoutMs, then passed on as it is; an answer to be retried is
 * dropped (`discard`) and the next attempt starts at once, while this body drains within the same
 * bounds, past which the attempt is aborted (its connection closed): an endless body never holds up
 * the retry, nor grows in memory.
 */
class AttemptHandler implements Handler {
  private mode: 'pass' | 'discard' | 'buffer' = 'pass';
  private held: Held | undefined;
  private drained = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private own: Controller | undefined;

  constructor(
    private readonly call: PacedCall,
    private readonly ticket: Ticket,
    private readonly attempt: number,
  ) {}

  private settle(status: number, headers: Headers, info: RateLimitInfo, problem?: ProblemInfo): boolean {
    const { call } = this;
    return call.pacer.settle(this.ticket, { status, method: call.method, headers, problem, attempt: this.attempt, retryAllowed: call.retryAllowed }, info);
  }

  private startTimer(onExpiry: () => void): void {
    this.timer = setTimeout(onExpiry, this.call.pacer.options.problemBodyTimeoutMs);
  }

  /** Drops this answer and starts the next attempt now; the body drains within the bounds, else the attempt is aborted. */
  private discard(): void {
    this.mode = 'discard';
    this.startTimer(() => this.cut());
    this.call.retry(this.attempt);
  }

  private cut(): void {
    clearTimeout(this.timer);
    this.own?.abort(new Error('floodgate: a refused answer\'s body passed problemBodyMaxBytes or problemBodyTimeoutMs'));
  }

  /** Reading for problem details is over without them: the held answer goes to the caller as it is. */
  private passHeld(): void {
    clearTimeout(this.timer);
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    this.mode = 'pass';
    if (this.settle(held.status, held.headers, held.info)) {
      this.discard();
      return;
    }
    const { caller, controller } = this.call;
    caller.onResponseStart?.(controller, held.status, held.headers, held.message);
    for (const c of held.chunks) caller.onResponseData?.(controller, c);
  }

  onRequestStart(controller: Controller): void {
    this.own = controller;
    this.call.controller.attach(controller);
  }

  onRequestUpgrade(_controller: Controller, statusCode: number, headers: Headers, socket: Parameters<NonNullable<Handler['onRequestUpgrade']>>[3]): void {
    const { call } = this;
    call.pacer.settle(this.ticket, { status: statusCode, method: call.method, headers, attempt: this.attempt, retryAllowed: false });
    call.caller.onRequestUpgrade?.(call.controller, statusCode, headers, socket);
  }

  onResponseStart(_controller: Controller, statusCode: number, headers: Headers, statusMessage?: string): void {
    const { call } = this;
    const info = parseRateLimit(headers);
    const { retryStatuses, problemBodyMaxBytes } = call.pacer.options;
    const contentType = first(headers['content-type']);
    const announced = Number(first(headers['content-length']) ?? 0);
    if (retryStatuses.has(statusCode) && info.retryAfterMs === undefined && isProblemJson(contentType) && problemBodyMaxBytes > 0 && !(announced > problemBodyMaxBytes)) {
      // The retry time may be in the body: read it, within bounds, before deciding.
      this.mode = 'buffer';
      this.held = { status: statusCode, headers, message: statusMessage, info, chunks: [], size: 0 };
      this.startTimer(() => this.passHeld());
      return;
    }
    if (this.settle(statusCode, headers, info)) {
      this.discard();
      return;
    }
    call.caller.onResponseStart?.(call.controller, statusCode, headers, statusMessage);
  }

  onResponseData(_controller: Controller, chunk: Buffer): void {
    if (this.mode === 'discard') {
      if ((this.drained += chunk.length) > this.call.pacer.options.problemBodyMaxBytes) this.cut();
      return;
    }
    const held = this.held;
    if (this.mode === 'buffer' && held) {
      held.chunks.push(chunk);
      held.size += chunk.length;
      // Too large for problem details: pass it on as it comes.
      if (held.size > this.call.pacer.options.problemBodyMaxBytes) this.passHeld();
      return;
    }
    this.call.caller.onResponseData?.(this.call.controller, chunk);
  }

  onResponseEnd(_controller: Controller, trailers: Headers): void {
    clearTimeout(this.timer);
    const { call } = this;
    if (this.mode === 'discard') return;
    const held = this.held;
    if (this.mode === 'buffer' && held) {
      this.held = undefined;
      const body = Buffer.concat(held.chunks);
      if (this.settle(held.status, held.headers, held.info, parseProblemDetails(body.toString('utf8')))) {
        this.mode = 'discard';
        call.retry(this.attempt);
        return;
      }
      call.caller.onResponseStart?.(call.controller, held.status, held.headers, held.message);
      if (body.length > 0) call.caller.onResponseData?.(call.controller, body);
    }
    // Finished only once the caller took the end: undici's retry handler throws from it to ask for
    // a retry, and the error it throws comes back through onResponseError, which must reach it.
    call.caller.onResponseEnd?.(call.controller, trailers);
    call.finished = true;
  }

  onResponseError(_controller: Controller, error: Error): void {
    clearTimeout(this.timer);
    // A dropped answer's error (its abort, above) is not the call's: the next attempt is under way.
    if (this.mode === 'discard') return;
    this.call.pacer.release(this.ticket);
    this.call.fail(error);
  }
}

/** A header's first value (undici gives an array for a repeated one). */
function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * An undici interceptor that paces every request it dispatches: before a request goes, it waits for
 * the quota its scope has left (RateLimit fields of every dialect), a Retry-After block and a
 * concurrency slot; a 429 or 503 with Retry-After is retried after that wait for the methods that
 * may be. Compose it with undici's own:
 *
 * ```ts
 * const agent = new Agent().compose(floodgatePacing({ maxWaitMs: 10_000 }));
 * // with undici's retry for network errors: every retry it makes is paced as well
 * const agent = new Agent().compose(floodgatePacing(), interceptors.retry({ statusCodes: [] }));
 * ```
 *
 * A call that would wait past `maxWaitMs` fails with RateLimitWaitError; aborting the request (its
 * signal, fetch's AbortController) ends a wait at once. Per call: `dispatch({ ..., pacing: { maxWaitMs } })`.
 * Pass a Pacer instead of options to share state with a pacedFetch or another Agent.
 */
export function floodgatePacing(options: PacingOptions | Pacer = {}): Dispatcher.DispatcherComposeInterceptor {
  const pacer = pacerFrom(options);
  return (dispatch) =>
    function floodgatePacingInterceptor(opts: PacedDispatchOptions, handler: Handler): boolean {
      let call: CallPacingOptions = {};
      let rest: Dispatcher.DispatchOptions = opts;
      if ('pacing' in opts) {
        const { pacing, ...others } = opts;
        call = resolveCallOptions(pacing);
        rest = others;
      }
      new PacedCall(pacer, dispatch, rest, call, handler).start();
      return true;
    };
}

export { Pacer } from './pacer/pacer';
export type { PacingOptions, CallPacingOptions, WaitEvent } from './options';
export { RateLimitWaitError, FloodgateClientError } from './errors';
