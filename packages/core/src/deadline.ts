// A deadline on one store call: past it the call fails with FG_STORE_TIMEOUT, and nothing retries it.
import { FloodgateError } from './errors';

/**
 * Settles like `promise`, or rejects with FG_STORE_TIMEOUT after `timeoutMs`; then `onExpire` runs
 * so the caller can refuse any follow-up work (the store may still run the call later: it must
 * never be sent again). The rejection waits one turn of the event loop after the timer: when the
 * loop was blocked past the deadline, a reply already sitting in the socket is read first, so a
 * busy process does not fail calls the store answered in time.
 */
export function withDeadline<T>(promise: Promise<T>, timeoutMs: number, what: string, onExpire?: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      setImmediate(() => {
        if (done) return;
        done = true;
        onExpire?.();
        reject(new FloodgateError('FG_STORE_TIMEOUT', `${what} did not answer within ${timeoutMs} ms.`));
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
