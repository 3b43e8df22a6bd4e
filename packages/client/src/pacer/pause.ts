// A wait that ends at a time, or when its scope changes, or rejects when the caller's AbortSignal fires.
import { MAX_TIMER_MS } from '../options';
import type { ScopeState } from './scope-state';

/** The reason an aborted signal carries (fetch's AbortError when it gave none). */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/**
 * Resolves after `ms` (Infinity: only on a change), or as soon as `scope` changes when `onChange` is
 * set; rejects with the signal's reason on abort. The timer keeps the process alive, as a request
 * in flight does. A wait past what a timer holds (2^31 - 1 ms, 24.8 days) resolves at that bound,
 * early, and the caller waits again (Node would fire a longer timer after 1 ms: a hot loop).
 */
export function pause(ms: number, scope: ScopeState, onChange: boolean, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    let unsubscribe: (() => void) | undefined;
    const done = () => {
      if (timer !== undefined) clearTimeout(timer);
      unsubscribe?.();
      signal?.removeEventListener('abort', aborted);
    };
    const aborted = () => {
      done();
      reject(abortReason(signal!));
    };
    if (Number.isFinite(ms)) {
      timer = setTimeout(() => {
        done();
        resolve();
      }, Math.min(MAX_TIMER_MS, Math.max(0, Math.ceil(ms))));
    }
    if (onChange) {
      unsubscribe = scope.onChange(() => {
        done();
        resolve();
      });
    }
    signal?.addEventListener('abort', aborted, { once: true });
  });
}
