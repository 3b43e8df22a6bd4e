// @floodgate/client/undici: floodgatePacing(options), an undici interceptor that composes with undici's own (Agent.compose).
import type { Dispatcher } from 'undici';
import { resolveCallOptions, type CallPacingOptions, type PacingOptions } from './options';
import { pacerFrom, type Pacer } from './pacer/pacer';
import type { Ticket } from './pacer/scope-state';
import { isProblemJson, parseProblemDetails, parseRateLimit, type RateLimitInfo } from './parse';

type Handler = Dispatcher.DispatchHandler;
type Controller = Dispatcher.DispatchController;
type Headers = Parameters<NonNullable<Handler['onResponseStart']>>[2];

/** A problem+json body is read for its fields only up to this size; past it the response is passed on as is. */
const PROBLEM_BODY_MAX = 64 * 1024;

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
  private readonly controller: CallController;
  private readonly waitAbort = new AbortController();
  private finished = false;
  private readonly scope: string;
  private readonly budget;
  private readonly method: string;
  private readonly retryAllowed: boolean;

  constructor(
    private readonly pacer: Pacer,
    private readonly dispatch: Dispatcher.Dispatch,
    private readonly opts: Dispatcher.DispatchOptions,
    call: CallPacingOptions,
    private readonly handler: Handler,
  ) {
    this.scope = scopeOf(pacer, opts);
    this.budget = pacer.budget(call.maxWaitMs, this.waitAbort.signal);
    this.method = String(opts.method ?? 'GET').toUpperCase();
    this.retryAllowed = call.retry !== false && replayable(opts.body);
    this.controller = new CallController((reason) => this.waitAbort.abort(reason));
  }

  start(): void {
    // Told once, before any wait, so that the caller's abort (its signal, fetch's termination) reaches a waiting call.
    this.handler.onRequestStart?.(this.controller, {});
    void this.attempt(0);
  }

  private fail(error: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.handler.onResponseError?.(this.controller, error);
  }

  private async attempt(attempt: number): Promise<void> {
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
    this.controller.target = undefined;
    try {
      this.dispatch(this.opts, this.attemptHandler(ticket, attempt));
    } catch (error) {
      this.pacer.release(ticket);
      this.fail(error as Error);
    }
  }

  /** The handler of one attempt: passes the response on, or holds it back when it is to be retried. */
  private attemptHandler(ticket: Ticket, attempt: number): Handler {
    const call = this;
    const caller = this.handler;
    let mode: 'pass' | 'discard' | 'buffer' = 'pass';
    let held: { status: number; headers: Headers; message?: string; info: RateLimitInfo; chunks: Buffer[]; size: number } | undefined;
    const settle = (status: number, headers: Headers, info: RateLimitInfo, problem?: ReturnType<typeof parseProblemDetails>) =>
      call.pacer.settle(ticket, { status, method: call.method, headers, problem, attempt, retryAllowed: call.retryAllowed }, info);
    return {
      onRequestStart(controller) {
        call.controller.attach(controller);
      },
      onRequestUpgrade(_controller, statusCode, headers, socket) {
        call.pacer.settle(ticket, { status: statusCode, method: call.method, headers, attempt, retryAllowed: false });
        caller.onRequestUpgrade?.(call.controller, statusCode, headers, socket);
      },
      onResponseStart(_controller, statusCode, headers, statusMessage) {
        const info = parseRateLimit(headers);
        const candidate = call.pacer.options.retryStatuses.has(statusCode);
        const contentType = headers['content-type'];
        if (candidate && info.retryAfterMs === undefined && isProblemJson(Array.isArray(contentType) ? contentType[0] : contentType)) {
          // The retry time may be in the body: read it before deciding.
          mode = 'buffer';
          held = { status: statusCode, headers, message: statusMessage, info, chunks: [], size: 0 };
          return;
        }
        if (settle(statusCode, headers, info)) {
          mode = 'discard';
          return;
        }
        caller.onResponseStart?.(call.controller, statusCode, headers, statusMessage);
      },
      onResponseData(_controller, chunk) {
        if (mode === 'discard') return;
        if (mode === 'buffer' && held) {
          held.chunks.push(chunk);
          held.size += chunk.length;
          if (held.size <= PROBLEM_BODY_MAX) return;
          // Too large for problem details: pass it on as it comes.
          settle(held.status, held.headers, held.info);
          caller.onResponseStart?.(call.controller, held.status, held.headers, held.message);
          for (const c of held.chunks) caller.onResponseData?.(call.controller, c);
          mode = 'pass';
          held = undefined;
          return;
        }
        caller.onResponseData?.(call.controller, chunk);
      },
      onResponseEnd(_controller, trailers) {
        if (mode === 'discard') {
          void call.attempt(attempt + 1);
          return;
        }
        if (mode === 'buffer' && held) {
          const body = Buffer.concat(held.chunks);
          const problem = parseProblemDetails(body.toString('utf8'));
          if (settle(held.status, held.headers, held.info, problem)) {
            void call.attempt(attempt + 1);
            return;
          }
          caller.onResponseStart?.(call.controller, held.status, held.headers, held.message);
          if (body.length > 0) caller.onResponseData?.(call.controller, body);
        }
        // Finished only once the caller took the end: undici's retry handler throws from it to ask for
        // a retry, and the error it throws comes back through onResponseError, which must reach it.
        caller.onResponseEnd?.(call.controller, trailers);
        call.finished = true;
      },
      onResponseError(_controller, error) {
        call.pacer.release(ticket);
        call.fail(error);
      },
    };
  }
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
