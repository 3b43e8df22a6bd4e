// A deadline on one store call: past it the call fails with FG_STORE_TIMEOUT, and nothing retries it; the store's late answer stays observable.
import { nextTurn } from './next-turn';
import { FloodgateError, withoutStack } from './errors';

const ignore = (): void => undefined;

/**
 * FG_STORE_TIMEOUT for a call the store may still answer. `late` settles with that answer if it
 * ever comes: a slow store is alive, and what it decided still counts (the failure policy reads it:
 * failure/store-link.ts). Never a reason to send the call again: it may already have counted.
 */
export class StoreTimeout<T = unknown> extends FloodgateError {
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly late: Promise<T>,
  ) {
    super('FG_STORE_TIMEOUT', `${what} did not answer within ${timeoutMs} ms.`);
    // Nobody has to listen: a late failure is not an unhandled rejection.
    late.catch(ignore);
  }

  /** The same timeout for a part of the answer (one request of a coalesced call). */
  part<U>(pick: (value: T) => U): StoreTimeout<U> {
    return withoutStack(() => new StoreTimeout(this.what, this.timeoutMs, this.late.then(pick)));
  }
}

/** The late answer of a call that timed out, if the error is such a timeout. */
export function lateAnswer<T>(error: unknown): Promise<T> | undefined {
  return error instanceof StoreTimeout ? (error.late as Promise<T>) : undefined;
}

/**
 * Settles like `promise`, or rejects with a StoreTimeout (FG_STORE_TIMEOUT) after `timeoutMs`; then
 * `onExpire` runs so the caller can refuse any follow-up work (the store may still run the call
 * later: it must never be sent again). The rejection waits one turn of the event loop after the
 * timer: when the loop was blocked past the deadline, a reply already sitting in the socket is read
 * first, so a busy process does not fail calls the store answered in time.
 */
export function withDeadline<T>(promise: Promise<T>, timeoutMs: number, what: string, onExpire?: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      nextTurn(() => {
        if (done) return;
        done = true;
        onExpire?.();
        // Made by the hundreds under a flood, in a timer callback: no stack (errors.ts withoutStack).
        reject(withoutStack(() => new StoreTimeout(what, timeoutMs, promise)));
      });
    }, timeoutMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        if (done) return;
        done = true;
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        if (done) return;
        done = true;
        reject(error);
      },
    );
  });
}
